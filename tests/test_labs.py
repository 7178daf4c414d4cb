"""Labs through the pages and the loader: built-in labs load into a course, a step's Markdown renders inert, a step's
state is computed from the student's own runs wherever they launched them, and only the course's teachers see the
class's grid."""

from __future__ import annotations

import csv
import io
from html.parser import HTMLParser

import pytest
from django.urls import reverse
from django.utils import timezone

from core.choices import JobState
from jobs.builtin import load_builtin_templates
from labs.builtin import LabFileInvalid, builtin_definitions, load_builtin_lab, load_lab
from labs.models import Lab, Step
from labs.progress import State, student_progress

HOSTILE = """\
# Hostile

<script>document.title = "owned"</script>
<img src=x onerror="document.title='owned'">
[click me](javascript:document.title='owned') <a href="javascript:alert(1)" onclick="alert(1)">raw</a>
<iframe src="https://example.org"></iframe>

```bash
echo "<b>not bold</b>"
```
"""


def lab_definition(**step_overrides) -> dict:
    step = {
        "title": "Say the word",
        "instructions": HOSTILE,
        "template": "sleep-echo",
        "preset": {"message": "lab-word-42", "exit_code": 0},
        "fixed": ["message"],
        "check": {"kind": "log", "pattern": "lab-word-42"},
        "quick_fixes": [{"states": ["failed"], "text": "It exited with an error: set Exit code to 0."}],
        **step_overrides,
    }
    return {
        "slug": "warm-up",
        "title": "Warm-up",
        "summary": "First steps.",
        "sections": [
            {"title": "Start", "minutes": 10, "steps": [step]},
            {
                "title": "Think",
                "minutes": 5,
                "steps": [{"title": "Which?", "check": {"kind": "answer", "choices": ["A", "B"], "correct": "B"}}],
            },
        ],
    }


@pytest.fixture
def lab(course, sleep_template, cluster):
    return load_lab(course, lab_definition())


def test_every_builtin_lab_loads_into_a_course_and_loading_again_changes_nothing(course, cluster):
    load_builtin_templates()
    for slug in builtin_definitions():
        load_builtin_lab(course, slug)
    steps = Step.objects.filter(section__lab__course=course).count()
    for slug in builtin_definitions():
        load_builtin_lab(course, slug)
    assert Lab.objects.filter(course=course).count() == len(builtin_definitions()) >= 3
    assert Step.objects.filter(section__lab__course=course).count() == steps
    ddp = Step.objects.get(section__lab__slug="day2-llm", template__slug="tiny-lm-ddp")
    assert ddp.preset["gpus_per_node"] == 2 and ddp.fixed == ["gpus_per_node"]
    assert course.templates.filter(slug="tiny-lm-ddp").exists()  # its launch button finds it in the catalog


def test_a_step_whose_template_no_cluster_of_the_course_runs_says_so(login, instructor, course, cluster):
    load_builtin_templates()
    load_builtin_lab(course, "day2-llm")  # the course has a SLURM cluster only
    page = login(instructor).get(reverse("labs:lab", args=[course.slug, "day2-llm"])).content.decode()
    assert "No cluster of this course runs Kubernetes (API) jobs, so this step cannot be launched" in page
    assert page.count('class="button primary step-launch"') == 5  # the SLURM steps


def test_a_lab_file_with_a_check_that_is_not_data_is_refused(course, sleep_template):
    with pytest.raises(LabFileInvalid, match="pattern"):
        load_lab(course, lab_definition(check={"kind": "log"}))
    with pytest.raises(LabFileInvalid):
        load_lab(course, lab_definition(check={"kind": "log", "pattern": "x" * 201}))
    with pytest.raises(LabFileInvalid, match="Fixed values need a preset"):
        load_lab(course, lab_definition(fixed=["seconds"]))


class Elements(HTMLParser):
    """Every element of a piece of HTML, as a browser's parser sees it: (tag, attributes)."""

    def __init__(self, html: str):
        super().__init__()
        self.found: list[tuple[str, dict]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def test_markdown_renders_inert_in_the_page(login, alice, lab):
    page = login(alice).get(reverse("labs:lab", args=[lab.course.slug, lab.slug])).content.decode()
    step = page.split('id="step-', 1)[1].split("</article>")[0]
    elements = Elements(step).found
    tags = {tag for tag, _ in elements}
    assert tags.isdisjoint({"script", "iframe", "img", "object", "embed"}) and "pre" in tags and "h1" in tags
    attributes = [(name, value or "") for _, attrs in elements for name, value in attrs.items()]
    assert not [name for name, _ in attributes if name.startswith("on")]
    assert not [value for name, value in attributes if name in {"href", "src"} and "javascript" in value.lower()]
    assert "&lt;script&gt;" in step  # shown as the text it is
    assert '<code class="language-bash">echo "&lt;b&gt;not bold&lt;/b&gt;"' in step
    assert "js/labs.js" in page  # the copy buttons' script, served from static/


def test_the_step_link_opens_the_launch_form_with_fixed_values_locked(login, alice, lab):
    step = Step.objects.get(section__lab=lab, position=1, section__position=1)
    client = login(alice)
    answer = client.get(reverse("labs:launch_step", args=[lab.course.slug, lab.slug, step.pk]))
    assert answer.status_code == 302 and "set.message=lab-word-42" in answer.url and "fix=message" in answer.url
    form = client.get(answer.url).content.decode()
    assert 'id="id_param_message">lab-word-42 <span class="small muted">(set by the lab step)' in form
    assert 'name="param_exit_code"' in form  # preset but not fixed: still a field
    url = reverse("jobs:launch", args=[lab.course.slug, "sleep-echo"])
    hostile = client.get(url, {"set.message": "<script>x</script>", "fix": "message"}).content.decode()
    assert "<script>x</script>" not in hostile and "&lt;script&gt;x&lt;/script&gt;" in hostile  # shown, escaped
    data = {"cluster": lab.course.clusters.get().pk, "param_partition": "debug", "param_time_minutes": 2}
    data |= {"param_gpus_per_node": 0, "param_seconds": 1, "param_exit_code": 0}
    posted = client.post(f"{url}?set.message={'x' * 201}&fix=message", data)
    assert posted.status_code == 400 and 'id="field-param_message"' in posted.content.decode()
    assert "at most 200 characters" in posted.content.decode()  # a locked value is validated as the template types it


def test_a_run_from_the_catalog_counts_and_a_failed_one_shows_its_quick_fix(lab, alice, bob, make_job, login):
    failed = make_job(alice, message="lab-word-42", exit_code=3)
    failed.state, failed.finished_at = JobState.FAILED, timezone.now()
    failed.save()
    first = student_progress(lab, alice, read_logs=False)[0]
    assert first.state == State.FAILED and first.quick_fix.startswith("It exited with an error")
    page = login(alice).get(reverse("labs:lab", args=[lab.course.slug, lab.slug])).content.decode()
    assert "Quick fix: It exited with an error: set Exit code to 0." in page
    other = make_job(alice, message="something-else")  # not the step's fixed value: not a run of this step
    assert other not in student_progress(lab, alice, read_logs=False)[0].jobs
    assert student_progress(lab, bob, read_logs=False)[0].state == State.NOT_STARTED  # alice's runs are hers


def test_a_step_with_two_runs_that_started_links_to_their_comparison_oldest_first(lab, alice, bob, make_job, login):
    url = reverse("labs:lab", args=[lab.course.slug, lab.slug])
    first = make_job(alice, message="lab-word-42")
    never_ran = make_job(alice, message="lab-word-42")  # cancelled while queued: nothing to compare
    never_ran.state, never_ran.finished_at = JobState.CANCELLED, timezone.now()
    never_ran.save()
    first.state, first.started_at, first.scheduler_id = JobState.RUNNING, timezone.now(), "11"
    first.save()
    assert "Compare your runs of this step" not in login(alice).get(url).content.decode()  # one run is no comparison
    second = make_job(alice, message="lab-word-42", exit_code=3)
    second.state, second.started_at, second.scheduler_id = JobState.FAILED, timezone.now(), "12"
    second.save()
    page = login(alice).get(url).content.decode()
    link = reverse("experiments:compare") + f"?jobs={first.pk}%2C{second.pk}"
    assert f'href="{link}"' in page and str(never_ran.pk) not in link
    assert login(alice).get(link).status_code == 200  # the comparison opens for the student
    assert "Compare your runs of this step" not in login(bob).get(url).content.decode()  # bob has no runs of it


def test_a_choice_answer_is_checked_at_once(login, alice, lab):
    step = Step.objects.get(section__lab=lab, section__position=2)
    client = login(alice)
    url = reverse("labs:answer", args=[lab.course.slug, lab.slug, step.pk])
    client.post(url, {"text": "A"})
    assert student_progress(lab, alice, read_logs=False)[1].state == State.FAILED
    client.post(url, {"text": "B"})
    assert student_progress(lab, alice, read_logs=False)[1].state == State.DONE


def test_only_the_course_s_teachers_see_the_grid_and_another_course_s_lab_is_missing(
    client, login, alice, ta, instructor, carol, other_instructor, lab
):
    grid = reverse("labs:grid", args=[lab.course.slug, lab.slug])
    page = reverse("labs:lab", args=[lab.course.slug, lab.slug])
    assert client.get(page).status_code == 302  # to the login page
    assert login(carol).get(page).status_code == 404
    assert login(other_instructor).get(grid).status_code == 404
    assert login(alice).get(grid).status_code == 404
    assert login(alice).get(reverse("labs:csv", args=[lab.course.slug, lab.slug])).status_code == 404
    assert login(ta).get(grid).status_code == 200
    body = login(instructor).get(grid).content.decode()
    assert f'data-student="{alice.pk}"' in body


def test_a_ta_may_not_load_labs(login, ta, course):
    answer = login(ta).post(reverse("labs:load", args=[course.slug]), {"lab": "hpc-mpi"})
    assert answer.status_code == 403


def test_the_grading_csv_keeps_a_formula_as_text(login, instructor, make_user, course, lab):
    from courses.models import Enrollment, Role

    Enrollment.objects.create(course=course, user=make_user("=cmd|calc"), role=Role.STUDENT)
    text = login(instructor).get(reverse("labs:csv", args=[course.slug, lab.slug])).content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:4] == ["student", "section", "step", "state"]
    assert any(row[0] == "'=cmd|calc" for row in rows[1:])
    assert not any(row[0].startswith("=") for row in rows)


def test_a_note_to_one_student_shows_on_their_page_only_and_is_a_notification(login, instructor, alice, bob, lab):
    from notifications.models import Notification

    url = reverse("labs:note", args=[lab.course.slug, lab.slug])
    login(instructor).post(url, {"text": "Alice, look at your batch size.", "student": alice.pk})
    page = reverse("labs:lab", args=[lab.course.slug, lab.slug])
    assert "look at your batch size" in login(alice).get(page).content.decode()
    assert "look at your batch size" not in login(bob).get(page).content.decode()
    assert Notification.objects.filter(user=alice, event="lab_note").exists()
    assert not Notification.objects.filter(user=bob, event="lab_note").exists()


def test_the_api_gives_the_caller_their_own_progress_and_teachers_the_class_s(api_for, alice, bob, ta, lab, make_job):
    make_job(alice, message="lab-word-42")
    base = f"/api/v1/courses/{lab.course.slug}/labs/{lab.slug}"
    detail = api_for(alice).get(f"{base}/").json()
    assert detail["sections"][0]["steps"][0]["check"] == {"kind": "log", "pattern": "lab-word-42"}
    assert api_for(alice).get(f"{base}/progress/").json()[0]["state"] == "running"
    assert api_for(bob).get(f"{base}/progress/").json()[0]["state"] == "not_started"  # his own, not alice's
    assert api_for(bob).get(f"{base}/progress/class/").status_code == 404
    rows = {row["student"]: row for row in api_for(ta).get(f"{base}/progress/class/").json()}
    assert rows["alice"]["steps"][0]["state"] == "running" and rows["bob"]["done"] == 0


def test_a_lab_tied_to_a_lab_session_shows_its_countdown_and_gpus(login, instructor, ta, alice, lab, cluster):
    from datetime import timedelta

    from courses.models import LabSession, LabSessionState

    start = timezone.now() + timedelta(minutes=5)
    session = LabSession.objects.create(
        course=lab.course, cluster=cluster, starts_at=start, ends_at=start + timedelta(hours=3), gpus=4, gpus_held=4
    )
    url = reverse("labs:session", args=[lab.course.slug, lab.slug])
    assert login(ta).post(url, {"lab_session": session.pk}).status_code == 403  # a TA does not book
    login(instructor).post(url, {"lab_session": session.pk})
    page = login(alice).get(reverse("labs:lab", args=[lab.course.slug, lab.slug])).content.decode()
    assert 'id="lab-session"' in page and "4 of 4 GPU(s) held" in page and "data-countdown" in page
    LabSession.objects.filter(pk=session.pk).update(state=LabSessionState.CANCELLED)
    page = login(alice).get(reverse("labs:lab", args=[lab.course.slug, lab.slug])).content.decode()
    assert 'id="lab-session"' not in page  # a cancelled session counts nothing down


def test_the_admin_refuses_a_check_that_is_not_the_vocabulary(client, admin_user, lab):
    step = Step.objects.get(section__lab=lab, section__position=1)
    client.force_login(admin_user)
    url = reverse("admin:labs_step_change", args=[step.pk])
    assert client.get(url).status_code == 200
    data = {"section": step.section_id, "position": 1, "title": "x", "instructions": "", "template": step.template_id}
    data |= {"preset": "{}", "fixed": "[]", "quick_fixes": "[]", "check_spec": '{"kind": "run_this_code"}'}
    answer = client.post(url, data)
    assert answer.status_code == 200 and "is not a valid choice" in answer.content.decode()
    step.refresh_from_db()
    assert step.check_spec["kind"] == "log"


def _ended_with_series(job, util: list[float], tok_s: list[float]):
    """A run as the collector leaves it: its series stored every ten seconds, then its summary."""
    from telemetry.models import JobSummary, SeriesChunk

    now = timezone.now()
    start_ms = int(now.timestamp() * 1000) - 10_000 * len(util)
    times = [start_ms + 10_000 * i for i in range(len(util))]
    series = {
        "gpu-util": {"0": {"name": "GPU 0", "x": times, "y": util}},
        "tokens": {"tok": {"name": "tok/s", "x": list(range(len(tok_s))), "y": tok_s}},
    }
    SeriesChunk.objects.create(job=job, start=now, end=now, series=series)
    job.state, job.finished_at = JobState.COMPLETED, now
    job.save()
    JobSummary.objects.create(job=job, mean_gpu_util=sum(util) / len(util))


def test_a_figure_check_reads_the_stored_series_after_the_first_minute(
    course, sleep_template, cluster, alice, make_job
):
    lab = load_lab(
        course, lab_definition(check={"kind": "figure", "figure": "gpu_util", "bound": "at_least", "value": 70})
    )
    # Busy only while warming up: 95 % in the first minute, 40 % after it (its whole-run mean is 70).
    _ended_with_series(make_job(alice, message="lab-word-42"), [95.0] * 6 + [40.0] * 5, [1000.0])
    first = student_progress(lab, alice, read_logs=False)[0]
    assert first.state == State.FAILED and first.figure == 40.0 and "asks for ≥ 70" in first.why
    _ended_with_series(make_job(alice, message="lab-word-42"), [10.0] * 6 + [80.0, 90.0], [1000.0])
    done = student_progress(lab, alice, read_logs=False)[0]
    assert done.state == State.DONE and done.figure == 85.0


def test_a_tok_s_check_takes_the_median_so_one_slow_step_does_not_decide(
    course, sleep_template, cluster, alice, make_job
):
    check = {"kind": "figure", "figure": "tokens_per_s", "bound": "at_least", "value": 500}
    lab = load_lab(course, lab_definition(check=check))
    _ended_with_series(make_job(alice, message="lab-word-42"), [50.0], [10.0, 600.0, 620.0, 640.0])
    assert student_progress(lab, alice, read_logs=False)[0].figure == 610.0
    assert student_progress(lab, alice, read_logs=False)[0].state == State.DONE


def test_an_instructor_loads_a_builtin_lab_from_the_course_page_and_by_command(login, instructor, course, cluster):
    from django.core.management import call_command

    load_builtin_templates()
    client = login(instructor)
    assert 'id="load-lab"' in client.get(reverse("labs:list", args=[course.slug])).content.decode()
    answer = client.post(reverse("labs:load", args=[course.slug]), {"lab": "hpc-mpi"})
    assert answer.status_code == 302 and answer.url == reverse("labs:grid", args=[course.slug, "hpc-mpi"])
    out = io.StringIO()
    call_command("load_labs", course.slug, "hpc-mpi", "gpu-orchestration", stdout=out)
    assert "Loaded HPC fundamentals: MPI hello into hpc" in out.getvalue()
    assert sorted(course.labs.values_list("slug", flat=True)) == ["gpu-orchestration", "hpc-mpi"]


def test_the_grid_asks_the_database_the_same_number_of_times_for_two_students_or_eight(
    login, instructor, make_user, course, lab, make_job
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from courses.models import Enrollment, Role

    client = login(instructor)
    url = reverse("labs:grid", args=[course.slug, lab.slug])

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    for name in ("s1", "s2"):
        student = make_user(name)
        Enrollment.objects.create(course=course, user=student, role=Role.STUDENT)
        make_job(student, message="lab-word-42")
    few = queries()
    for name in ("s3", "s4", "s5", "s6", "s7", "s8"):
        student = make_user(name)
        Enrollment.objects.create(course=course, user=student, role=Role.STUDENT)
        make_job(student, message="lab-word-42")
    assert queries() == few


def test_the_grid_flags_the_stuck_and_puts_who_is_behind_first(lab, alice, bob, make_job, running_job):
    from datetime import timedelta

    from jobs.models import IdleWarning, Job
    from labs import grid
    from labs.access import students_of

    for _ in range(2):
        failed = make_job(bob, message="lab-word-42")
        Job.objects.filter(pk=failed.pk).update(state=JobState.FAILED, finished_at=timezone.now())
    waiting = make_job(alice, message="lab-word-42")
    Job.objects.filter(pk=waiting.pk).update(state=JobState.PENDING, created_at=timezone.now() - timedelta(minutes=40))
    rows = {row.student.username: row for row in grid.rows(lab, students_of(lab.course))}
    assert "failed twice" in rows["bob"].cells[0].flags
    assert f"waiting > {lab.stuck_after_minutes} min" in rows["alice"].cells[0].flags

    Job.objects.filter(pk=waiting.pk).update(state=JobState.RUNNING)
    IdleWarning.objects.create(job=waiting, warned_at=timezone.now())
    assert "idle GPU" in grid.rows(lab, [alice])[0].cells[0].flags


def test_the_pace_says_how_late_the_median_student_is_against_the_plan(lab, alice, bob, make_job):
    from datetime import timedelta

    from courses.models import LabSession
    from labs import grid
    from labs.access import students_of

    start = timezone.now() - timedelta(minutes=30)  # "Start" was planned to end 20 minutes ago
    lab.lab_session = LabSession.objects.create(
        course=lab.course, cluster=make_job(alice).cluster, starts_at=start, ends_at=start + timedelta(hours=2), gpus=1
    )
    lab.save()
    start_section = grid.pace(lab, grid.rows(lab, students_of(lab.course)))[0]
    assert start_section.section.title == "Start" and start_section.finished == 0
    assert 19 <= start_section.behind_minutes <= 21  # nobody done: both count as finishing now


def test_a_text_answer_waits_for_a_mark_and_the_instructor_accepts_it(login, alice, instructor, course, sleep_template):
    definition = lab_definition(preset={}, fixed=[], check={"kind": "answer"})
    del definition["sections"][0]["steps"][0]["template"]  # a question: nothing to launch
    lab = load_lab(course, definition)
    step = Step.objects.get(section__lab=lab, section__position=1)
    login(alice).post(reverse("labs:answer", args=[course.slug, lab.slug, step.pk]), {"text": "Twice as fast."})
    assert student_progress(lab, alice, read_logs=False)[0].state == State.WAITING
    grid_page = login(instructor).get(reverse("labs:grid", args=[course.slug, lab.slug])).content.decode()
    assert "Twice as fast." in grid_page
    answer = step.answers.get()
    login(instructor).post(reverse("labs:mark", args=[course.slug, lab.slug, answer.pk]), {"accepted": "1"})
    assert student_progress(lab, alice, read_logs=False)[0].state == State.DONE


@pytest.mark.parametrize(
    "hostile",
    [
        "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "[x](vbscript:msgbox(1))",
        "[x](JaVaScRiPt:alert(1))",
        "<javascript:alert(1)>",
        '[x](https://example.org "t" onclick="alert(1)")',
        "<a href=https://example.org onmouseover=alert(1)>raw</a>",
        "```\n</code></pre><script>alert(1)</script>\n```",
    ],
    ids=["data", "vbscript", "mixed-case", "autolink", "title-attr", "raw-a", "fence-break"],
)
def test_a_step_s_markdown_keeps_no_script_scheme_handler_or_tag_whatever_it_is_written_as(hostile):
    from labs.markdown import render

    html = str(render(hostile))
    elements = Elements(html).found
    assert {tag for tag, _ in elements} <= {"p", "a", "pre", "code"}, html
    for _, attrs in elements:
        assert not [name for name in attrs if name.startswith("on")], html
        href = (attrs.get("href") or "").lower()
        assert not href or href.startswith(("http://", "https://", "mailto:")), html
