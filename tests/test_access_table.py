"""Who may open and change what, for every course and job page and every API route, in one table (docs/roles.md).

The URL resolver is walked: a course- or job-scoped URL, or an API route, without a row here fails
test_every_course_and_job_url_and_api_route_has_a_row, so a new page is given its answers when it is added.

Each row is a URL name, a method and the answer for each actor, in the order of ACTORS:
  anon     nobody signed in                  owner  alice, a student of the course who launched the job
  student  bob, another student of the course ta    tara, a TA of the course
  teacher  ines, the course's instructor       admin  ada, staff
  other    otto, the instructor of another course
Answers: 200; login (302 to the login page); 401 (the API, nobody signed in); 403; 404; 405; ok (let through:
any answer but 401, 403, 404, 405, a 500 or the login page, e.g. 302 back to the page, 400 for an empty form,
409 for a job that has no server).
"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from core.choices import JobState, SessionKind
from courses.models import LabSession
from sweeps.models import Sweep, SweepRun

pytestmark = pytest.mark.django_db

ACTORS = ["anon", "student", "owner", "ta", "teacher", "admin", "other"]

# Rows by the kind of question they ask; each string lists the answers for ACTORS in order.
MEMBER = "login 200 200 200 200 200 404"  # a page of the course for anyone in it
TEACH = "login 404 404 200 200 200 404"  # the course's jobs: its TAs, instructors and admins
TEACH_DO = "login 404 404 ok ok ok 404"
MANAGE = "login 404 404 403 200 200 404"  # the instructor's pages: a TA is told no
MANAGE_DO = "login 404 404 403 ok ok 404"
SEE_JOB = "login 404 200 200 200 200 404"  # alice's job: its owner and the course's teachers
DO_JOB = "login 404 ok ok ok ok 404"  # cancel, clone
ACT_JOB = "login 404 ok 403 ok ok 404"  # its server and idle clock: not a TA
MEMBER_DO = "login ok ok ok ok ok 404"  # a lab step's launch link and answer: anyone in the course
API_MEMBER = "401 200 200 200 200 200 404"
API_TEACH = "401 404 404 200 200 200 404"
API_ANYONE = "401 200 200 200 200 200 200"
API_NO_WRITE = "401 405 405 405 405 405 405"
API_MANAGE = "401 404 404 403 200 200 404"
API_MANAGE_DO = "401 404 404 403 ok ok 404"
API_SEE_JOB = "401 404 200 200 200 200 404"
API_DO_JOB = "401 404 ok ok ok ok 404"
API_ACT_JOB = "401 404 ok 403 ok ok 404"
API_FILES_READ = "401 404 ok ok ok ok 404"
API_FILES_WRITE = "401 404 ok 403 403 403 404"  # a job's files change only by its owner
API_OWN_SPACE = "401 ok ok ok ok ok 404"  # the user's own lab space on a cluster of their course

TABLE: dict[tuple[str, str], str] = {
    # The course's jobs (jobs/course_urls.py), dashboard and report (telemetry)
    ("courses:jobs", "GET"): TEACH,
    ("courses:cancel_jobs", "POST"): TEACH_DO,
    ("telemetry:dashboard", "GET"): TEACH,
    ("telemetry:dashboard_hour", "GET"): TEACH,  # the dashboard's last hour, redrawn each minute
    ("telemetry:report", "GET"): TEACH,
    ("telemetry:students_report", "GET"): TEACH,
    # The instructor's pages: roster, quotas, a new term, lab sessions, webhook, budgets, templates
    ("courses:roster", "GET"): MANAGE,
    ("courses:roster", "POST"): MANAGE_DO,  # a file, previewed
    ("courses:roster_import", "POST"): MANAGE_DO,  # the preview, saved
    ("courses:roster_add", "POST"): MANAGE_DO,
    ("courses:roster_invite_all", "POST"): MANAGE_DO,
    ("courses:roster_role", "POST"): MANAGE_DO,
    ("courses:roster_remove", "GET"): MANAGE,
    ("courses:roster_remove", "POST"): MANAGE_DO,
    ("courses:roster_invite", "POST"): MANAGE_DO,
    ("courses:quotas", "GET"): MANAGE,
    ("courses:quotas", "POST"): MANAGE_DO,
    ("courses:copy", "GET"): MANAGE,
    ("courses:copy", "POST"): MANAGE_DO,
    ("courses:lab_sessions", "GET"): MANAGE,
    ("courses:lab_sessions", "POST"): MANAGE_DO,
    ("courses:lab_session_cancel", "POST"): MANAGE_DO,
    ("notifications:course_webhook", "GET"): MANAGE,
    ("notifications:course_webhook", "POST"): MANAGE_DO,
    ("jobs:course_budgets", "GET"): MANAGE,
    ("jobs:course_budgets", "POST"): MANAGE_DO,
    ("jobs:budget_top_up", "POST"): MANAGE_DO,
    ("jobs:template_list", "GET"): MANAGE,
    ("jobs:template_new", "GET"): MANAGE,
    ("jobs:template_new", "POST"): MANAGE_DO,
    ("jobs:template_preview", "POST"): MANAGE_DO,
    ("jobs:template_edit", "GET"): MANAGE,
    ("jobs:template_edit", "POST"): MANAGE_DO,
    ("jobs:template_status", "POST"): MANAGE_DO,
    ("jobs:template_copy", "POST"): MANAGE_DO,
    ("jobs:template_move", "POST"): MANAGE_DO,
    # A member's pages of the course
    ("jobs:launch", "GET"): MEMBER,
    ("jobs:launch", "POST"): "login ok ok ok ok ok 404",
    ("jobs:budget", "GET"): MEMBER,
    # Alice's running job
    ("jobs:detail", "GET"): SEE_JOB,
    ("jobs:status", "GET"): SEE_JOB,
    ("jobs:log", "GET"): SEE_JOB,
    ("jobs:load_test_report", "GET"): SEE_JOB,
    ("jobs:cancel", "GET"): SEE_JOB,
    ("jobs:cancel", "POST"): DO_JOB,
    ("jobs:clone", "GET"): "login 404 302 302 302 302 404",  # to the launch form, filled in
    ("jobs:clone", "POST"): DO_JOB,
    ("jobs:keep", "POST"): ACT_JOB,
    ("jobs:scale", "POST"): ACT_JOB,
    ("jobs:try_it", "POST"): ACT_JOB,
    ("jobs:load_test", "POST"): ACT_JOB,
    ("sessions:job_files", "GET"): SEE_JOB,
    ("sessions:job_artefacts", "GET"): SEE_JOB,
    ("sessions:job_terminal", "GET"): "login 404 200 403 200 200 404",  # a shell: the owner or an instructor
    ("sessions:job_notebook", "GET"): SEE_JOB,  # the session page; JupyterLab itself is its owner's alone:
    ("sessions:job_notebook_status", "GET"): SEE_JOB,
    ("sessions:job_notebook_ready", "GET"): "login 404 200 403 403 403 404",
    # The API: templates are read-only for everyone (authored on the pages and in /admin/)
    ("api:template-list", "GET"): API_ANYONE,
    ("api:template-list", "POST"): API_NO_WRITE,
    ("api:template-detail", "GET"): API_MEMBER,
    ("api:template-detail", "PUT"): API_NO_WRITE,
    ("api:template-detail", "PATCH"): API_NO_WRITE,
    ("api:template-detail", "DELETE"): API_NO_WRITE,
    ("api:cluster-list", "GET"): API_ANYONE,
    ("api:cluster-detail", "GET"): API_MEMBER,
    ("api:job-list", "GET"): API_ANYONE,  # each sees the jobs they may see
    ("api:job-list", "POST"): "401 ok ok ok ok ok ok",  # launching one's own job; checked as on the page
    ("api:job-detail", "GET"): API_SEE_JOB,
    ("api:job-detail", "DELETE"): API_NO_WRITE,
    ("api:job-log", "GET"): API_SEE_JOB,
    ("api:job-streams", "GET"): API_SEE_JOB,
    ("api:job-cancel", "POST"): API_DO_JOB,
    ("api:job-clone", "POST"): API_DO_JOB,
    ("api:job-scale", "POST"): API_ACT_JOB,
    ("api:files-job", "GET"): API_FILES_READ,
    ("api:files-job-text", "GET"): API_FILES_READ,
    ("api:files-job-download", "GET"): API_FILES_READ,
    ("api:files-job-mkdir", "POST"): API_FILES_WRITE,
    ("api:files-job-rename", "POST"): API_FILES_WRITE,
    ("api:files-job-delete", "POST"): API_FILES_WRITE,
    ("api:files-job-upload", "GET"): API_FILES_WRITE,
    ("api:files-job-upload", "PUT"): API_FILES_WRITE,
    ("api:files-cluster", "GET"): API_OWN_SPACE,
    ("api:files-cluster-text", "GET"): API_OWN_SPACE,
    ("api:files-cluster-download", "GET"): API_OWN_SPACE,
    ("api:files-cluster-mkdir", "POST"): API_OWN_SPACE,
    ("api:files-cluster-rename", "POST"): API_OWN_SPACE,
    ("api:files-cluster-delete", "POST"): API_OWN_SPACE,
    ("api:files-cluster-upload", "GET"): API_OWN_SPACE,
    ("api:files-cluster-upload", "PUT"): API_OWN_SPACE,
    ("api:lab_sessions", "GET"): API_MANAGE,
    ("api:lab_sessions", "POST"): API_MANAGE_DO,
    ("api:lab_session", "GET"): API_MANAGE,
    ("api:lab_session", "DELETE"): API_MANAGE_DO,
    ("api:compare", "GET"): API_SEE_JOB,  # alice's job beside one that does not exist: none visible is 404
    ("api:course_roster", "GET"): API_MANAGE,
    ("api:course_dashboard", "GET"): "401 404 404 200 200 200 404",  # the class dashboard: the course's teachers
    # Sweeps: launched as jobs are; alice's sweep (its one run is her job) is seen and cancelled as her job is.
    ("sweeps:launch", "GET"): MEMBER,
    ("sweeps:launch", "POST"): "login ok ok ok ok ok 404",
    ("api:sweep-list", "GET"): API_ANYONE,
    ("api:sweep-list", "POST"): "401 ok ok ok ok ok ok",
    ("api:sweep-detail", "GET"): API_SEE_JOB,
    ("api:sweep-cancel", "POST"): API_DO_JOB,
    # Labs (labs/): the lab pages for the course's members, the progress grid for its teachers
    ("labs:list", "GET"): MEMBER,
    ("labs:load", "POST"): MANAGE_DO,
    ("labs:lab", "GET"): MEMBER,
    ("labs:launch_step", "GET"): MEMBER_DO,
    ("labs:answer", "POST"): MEMBER_DO,
    ("labs:grid", "GET"): TEACH,
    ("labs:csv", "GET"): TEACH,
    ("labs:note", "POST"): TEACH_DO,
    ("labs:session", "POST"): MANAGE_DO,
    ("labs:mark", "POST"): TEACH_DO,
    # The lab editor (labs/edit_views.py, labs/step_views.py): the course's instructors; a TA is told no
    ("labs:new", "GET"): MANAGE,
    ("labs:new", "POST"): MANAGE_DO,
    ("labs:import", "POST"): MANAGE_DO,
    ("labs:edit", "GET"): MANAGE,
    ("labs:edit", "POST"): MANAGE_DO,
    ("labs:preview", "POST"): MANAGE_DO,
    ("labs:export", "GET"): MANAGE,
    ("labs:section_add", "POST"): MANAGE_DO,
    ("labs:section_edit", "POST"): MANAGE_DO,
    ("labs:section_move", "POST"): MANAGE_DO,
    ("labs:section_remove", "GET"): MANAGE,
    ("labs:section_remove", "POST"): MANAGE_DO,
    ("labs:step_new", "GET"): MANAGE,
    ("labs:step_new", "POST"): MANAGE_DO,
    ("labs:step_edit", "GET"): MANAGE,
    ("labs:step_edit", "POST"): MANAGE_DO,
    ("labs:step_move", "POST"): MANAGE_DO,
    ("labs:step_remove", "GET"): MANAGE,
    ("labs:step_remove", "POST"): MANAGE_DO,
    ("api:labs", "GET"): API_MEMBER,
    ("api:labs", "POST"): API_MANAGE_DO,  # a lab file imported
    ("api:lab_file", "GET"): API_MANAGE,
    ("api:lab", "GET"): API_MEMBER,
    ("api:lab_progress", "GET"): API_MEMBER,
    ("api:lab_class", "GET"): API_TEACH,
}

# Runs named in the query rather than the path: {URL name: the query, from the test's world}.
QUERIES = {"api:compare": lambda world: f"?jobs={world['job'].pk},{uuid.uuid4()}"}

# What a request carries where an empty one would be refused before access is asked (the files API checks the body
# first): {URL name without the space: (query, body)}.
REQUESTS = {
    "files-mkdir": ("", {"name": "new"}),
    "files-rename": ("", {"path": "old.txt", "name": "new.txt"}),
    "files-delete": ("", {"path": "old.txt"}),
    "files-upload": ("?name=new.txt&size=1&offset=0", b"x"),
}

# URLs that are neither a course's nor a job's, each with why it has no row. An API route is never left out.
NOT_COURSE_SCOPED = {
    "api:api-root": "the API's index of routes",
    "api:token": "a token for the signed-in user",
    "api:schema": "the OpenAPI document",
    "api:docs": "the OpenAPI page",
    "api:token_code": "a browser-confirmed sign-in, started by anyone (signon/cli_login.py)",
    "api:token_code_poll": "its token, for whoever holds the secret code",
}

# Path parameters that make a URL a course's or a job's (and any parameter naming a course or a job).
SCOPED_PARAMS = {"slug", "course_slug", "job_id", "pk", "session_id", "user_id"}


def _scoped(name: str, route: str) -> bool:
    params = _params(route)
    named = any("course" in param or "job" in param for param in params)
    return name.startswith("api:") or "course" in route or named or bool(params & SCOPED_PARAMS)


def _walk(patterns, prefix: str = "", namespace: str | None = None):
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            if route.startswith("admin/"):
                continue  # Django's admin: staff only, not a course's page
            inner = pattern.namespace or namespace
            if namespace and pattern.namespace:
                inner = f"{namespace}:{pattern.namespace}"
            yield from _walk(pattern.url_patterns, route, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield (f"{namespace}:{pattern.name}" if namespace else pattern.name), route


def _params(route: str) -> set[str]:
    return set(re.findall(r"<(?:\w+:)?(\w+)>", route)) | set(re.findall(r"\(\?P<(\w+)>", route))


def scoped_url_names() -> set[str]:
    names = set()
    for name, route in _walk(get_resolver().url_patterns):
        if _scoped(name, route):
            names.add(name)
    return names


def test_every_course_and_job_url_and_api_route_has_a_row():
    scoped = scoped_url_names()
    rows = {name for name, _ in TABLE}
    assert scoped - rows - set(NOT_COURSE_SCOPED) == set(), "add the new URL's answers to TABLE"
    assert rows - scoped == set(), "a row names a URL that no longer exists"
    assert all(len(answers.split()) == len(ACTORS) for answers in TABLE.values())


@pytest.fixture
def world(
    course,
    other_course,
    cluster,
    sleep_template,
    alice,
    bob,
    ta,
    instructor,
    admin_user,
    other_instructor,
    fake_backend,
):
    from jobs.launch import launch

    sleep_template.session = SessionKind.JUPYTERLAB  # so that its session pages answer too
    sleep_template.save()
    job = launch(alice, course=course, template=sleep_template, cluster=cluster, raw_params={"seconds": 60})
    job.state, job.scheduler_id = JobState.RUNNING, "4242"
    job.save()
    start = timezone.now() + timedelta(days=1)
    session = LabSession.objects.create(
        course=course, cluster=cluster, starts_at=start, ends_at=start + timedelta(hours=1), gpus=1
    )
    from labs.models import Answer, Lab

    lab = Lab.objects.create(course=course, slug="warm-up", title="Warm-up")
    section = lab.sections.create(position=1, title="Start", planned_minutes=10)
    step = section.steps.create(position=1, title="Run it", template=sleep_template, preset={"seconds": 1})
    answer = Answer.objects.create(step=step, student=bob, text="42")
    users = {
        "anon": None,
        "student": bob,
        "owner": alice,
        "ta": ta,
        "teacher": instructor,
        "admin": admin_user,
        "other": other_instructor,
    }
    made = {"owner": alice, "course": course, "template": sleep_template, "cluster": cluster}
    sweep = Sweep.objects.create(**made, max_concurrent=1, script="", values_file="")
    SweepRun.objects.create(sweep=sweep, job=job, index=0)
    world = {"users": users, "job": job, "session": session, "course": course, "cluster": cluster, "sweep": sweep}
    return world | {"lab": lab, "step": step, "answer": answer}


def _kwargs(name: str, world) -> dict:
    job, course = world["job"], world["course"]
    route = dict(_walk(get_resolver().url_patterns))[name]
    values = {
        "slug": "sleep-echo" if "course_slug" in route or name.startswith("api:template") else course.slug,
        "course_slug": course.slug,
        "template_slug": "sleep-echo",
        "job_id": job.pk,
        "pk": world["sweep"].pk if name.startswith("api:sweep") else job.pk,
        "name": world["cluster"].name,
        "session_id": world["session"].pk,
        "user_id": world["users"]["student"].pk,
        "cluster_id": world["cluster"].pk,
        "lab_slug": world["lab"].slug,
        "step_id": world["step"].pk,
        "section_id": world["step"].section_id,
        "answer_id": world["answer"].pk,
    }
    return {param: values[param] for param in _params(route) if param != "format"}


def _answer(response) -> str:
    code = response.status_code
    if code == 302 and response.url.startswith(reverse("login")):
        return "login"
    return str(code)


def _matches(expected: str, got: str) -> bool:
    if expected == "ok":
        return got not in {"login", "401", "403", "404", "405"} and not got.startswith("5")
    return expected == got


def _ask(client, api_client, method: str, url: str, user, name: str):
    query, body = REQUESTS.get(re.sub(r"^api:files-(job|cluster)", "files", name), ("", {}))
    if name.startswith("api:"):
        api_client.force_authenticate(user)
        if method == "GET":
            return api_client.get(url + query)
        if isinstance(body, bytes):
            return getattr(api_client, method.lower())(url + query, body, content_type="application/octet-stream")
        return getattr(api_client, method.lower())(url + query, body, format="json")
    client.logout()
    if user is not None:
        client.force_login(user)
    return getattr(client, method.lower())(url)


@pytest.mark.parametrize(("name", "method"), list(TABLE))
def test_access_table(client, name, method, world):
    from rest_framework.test import APIClient

    url = reverse(name, kwargs=_kwargs(name, world)) + QUERIES.get(name, lambda world: "")(world)
    api_client = APIClient()
    wrong = []
    for actor, expected in zip(ACTORS, TABLE[name, method].split(), strict=True):
        with transaction.atomic():  # each actor meets the same course: what one changes is undone for the next
            response = _ask(client, api_client, method, url, world["users"][actor], name)
            transaction.set_rollback(True)
        got = _answer(response)
        if not _matches(expected, got):
            wrong.append(f"{actor}: expected {expected}, got {got}")
    assert not wrong, f"{method} {url}\n" + "\n".join(wrong)
