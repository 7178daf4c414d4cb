"""A fourth cluster kind registered from the test tree alone (tests/kinds/fake/) is launched, polled, cancelled and
previewed through the pages and the API: the plug-in seam of docs/adding-a-backend.md, with nothing under jobs/
knowing the kind. The tasks' bodies (submit, poll, cancel on the cluster) run here as a worker would run them."""

import json

import pytest
from django.urls import reverse

from clusters import kinds
from clusters.backends import BackendError
from clusters.models import AuthMethod, Cluster, ClusterAccount
from core.choices import JobState
from jobs import polling, submission
from jobs.cancellation import cancel_on_cluster
from jobs.models import Job, JobTemplate
from tests.kinds.fake.backend import MemoryBackend
from tests.template_forms import editor_data, editor_data_of

pytestmark = pytest.mark.django_db

BODY = json.dumps({"run": "count to {steps}", "gpus": "{gpus}", "job": "{job}"})
PARAMETERS = [
    {"name": "steps", "type": "int", "label": "Steps", "default": 3, "min": 1, "max": 100},
    {"name": "gpus", "type": "int", "label": "GPUs", "default": 0, "min": 0, "max": 8},
]


@pytest.fixture
def fake_kind():
    kinds.register("fake", "tests.kinds.fake.kind.FakeKind")
    MemoryBackend.reset()
    yield kinds.kind_of("fake")
    kinds.unregister("fake")


@pytest.fixture
def memory_cluster(fake_kind, course):
    cluster = Cluster.objects.create(name="memory", title="Memory cluster", kind="fake")
    account = ClusterAccount(cluster=cluster, username="memsvc", auth_method=AuthMethod.PASSWORD)
    account.set_secret("unused")
    account.save()
    course.clusters.add(cluster)
    return cluster


@pytest.fixture
def fake_template(fake_kind, course):
    template = JobTemplate.objects.create(
        name="Count",
        slug="count",
        description="Counts in memory.",
        backend="fake",
        body=BODY,
        parameters=PARAMETERS,
        status=JobTemplate.Status.PUBLISHED,
        max_gpus=4,
        max_minutes=10,
    )
    template.courses.add(course)
    return template


def test_fake_kind_template_is_offered_in_the_catalog_with_its_cluster(
    login, alice, course, memory_cluster, fake_template
):
    html = login(alice).get(reverse("jobs:catalog")).content.decode()
    assert reverse("jobs:launch", args=[course.slug, fake_template.slug]) in html


def test_launch_from_the_form_renders_with_the_kind_then_submit_poll_and_finish(
    login, alice, course, memory_cluster, fake_template
):
    url = reverse("jobs:launch", args=[course.slug, fake_template.slug])
    response = login(alice).post(url, {"cluster": memory_cluster.pk, "param_steps": 7, "param_gpus": 1})
    assert response.status_code == 302
    job = Job.objects.get()
    assert json.loads(job.script) == {"run": "count to 7", "gpus": "1", "job": str(job.pk)} and job.gpus == 1

    assert submission.submit(job.pk) is submission.Outcome.SUBMITTED
    job.refresh_from_db()
    assert job.state == JobState.PENDING and job.scheduler_id in MemoryBackend.jobs

    MemoryBackend.move(job.scheduler_id, JobState.RUNNING, raw_state="BUSY")
    polling.poll_cluster(memory_cluster.pk)
    MemoryBackend.move(job.scheduler_id, JobState.COMPLETED, raw_state="DONE", exit_code=0)
    polling.poll_cluster(memory_cluster.pk)
    job.refresh_from_db()
    assert job.state == JobState.COMPLETED and job.exit_code == 0
    assert MemoryBackend.poll_calls == [[job.scheduler_id], [job.scheduler_id]]  # one call per cycle

    page = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
    assert "Completed" in page


def test_the_kinds_own_refusal_reaches_the_student_as_it_is(login, alice, course, memory_cluster, fake_template):
    url = reverse("jobs:launch", args=[course.slug, fake_template.slug])
    response = login(alice).post(url, {"cluster": memory_cluster.pk, "param_steps": 7, "param_gpus": 3})
    assert "The memory cluster holds at most 2 GPUs a job; ask for 2 or fewer." in response.content.decode()
    assert not Job.objects.exists()


def test_launch_log_and_cancel_through_the_api(api_for, alice, memory_cluster, fake_template):
    api = api_for(alice)
    created = api.post("/api/v1/jobs/", {"template": "count", "cluster": "memory", "params": {"steps": 5}}, "json")
    assert created.status_code == 201, created.content
    job_id = created.json()["id"]
    assert submission.submit(job_id) is submission.Outcome.SUBMITTED
    job = Job.objects.get(pk=job_id)
    MemoryBackend.move(job.scheduler_id, JobState.RUNNING, raw_state="BUSY")
    polling.poll_cluster(memory_cluster.pk)

    log = api.get(f"/api/v1/jobs/{job_id}/log/?offset=0")
    assert log.status_code == 200 and "count to 5" in log.json()["data"]

    assert api.post(f"/api/v1/jobs/{job_id}/cancel/").status_code == 202
    cancel_on_cluster(job_id)
    job.refresh_from_db()
    assert job.state == JobState.CANCELLED
    assert MemoryBackend.jobs[job.scheduler_id]["status"].raw_state == "STOPPED"


def running_job(client, memory_cluster) -> Job:
    """A job launched through the API, submitted and seen running by a poll, as the worker would do it."""
    created = client.post("/api/v1/jobs/", {"template": "count", "cluster": "memory"}, "json")
    job = Job.objects.get(pk=created.json()["id"])
    submission.submit(job.pk)
    job.refresh_from_db()
    MemoryBackend.move(job.scheduler_id, JobState.RUNNING, raw_state="BUSY")
    polling.poll_cluster(memory_cluster.pk)
    return job


def test_the_job_page_draws_the_kinds_server_panel_and_scale_keeps_the_quota(
    login, api_for, alice, course, memory_cluster, fake_template
):
    job = running_job(api_for(alice), memory_cluster)
    page = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
    assert "<h2>In memory</h2>" in page and f'<dd class="mono">{job.scheduler_id}</dd>' in page
    assert 'id="scale"' in page and 'id="try-it"' not in page  # no prompts: no Try it, no load test

    scaled = api_for(alice).post(f"/api/v1/jobs/{job.pk}/scale/", {"replicas": 2}, "json")
    assert scaled.status_code == 200, scaled.content
    job.refresh_from_db()
    assert job.gpus == 2 and job.events.filter(message="Now 2 copies in memory.", actor=alice).exists()
    course.max_gpus = 1
    course.save()
    refused = api_for(alice).post(f"/api/v1/jobs/{job.pk}/scale/", {"replicas": 2}, "json")
    assert refused.status_code == 409 and "allows 1 per student" in refused.json()["detail"]


def test_server_actions_are_refused_once_the_term_has_ended_like_a_launch(
    login, api_for, alice, instructor, course, memory_cluster, fake_template
):
    from datetime import timedelta

    from django.utils import timezone

    from courses.models import Course

    job = running_job(api_for(alice), memory_cluster)
    now = timezone.now()
    Course.objects.filter(pk=course.pk).update(term_starts_at=now - timedelta(days=90), term_ends_at=now)
    for user in (alice, instructor):
        scaled = api_for(user).post(f"/api/v1/jobs/{job.pk}/scale/", {"replicas": 2}, "json")
        assert scaled.status_code == 409 and "The term of HPC Lab ended on" in scaled.json()["detail"]
        client = login(user)
        asked = client.post(reverse("jobs:try_it", args=[job.pk]), {"prompt": "hi"})
        assert asked.status_code == 400 and "The term of HPC Lab ended on" in asked.content.decode()
        tested = client.post(reverse("jobs:load_test", args=[job.pk]), follow=True).content.decode()
        assert "The term of HPC Lab ended on" in tested
        page = client.get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert 'id="server-refusal"' in page and 'id="scale"' not in page
    job.refresh_from_db()
    assert job.gpus == 0 and not job.events.filter(message__startswith="Now").exists()


def test_a_load_test_with_a_wrong_value_is_refused_in_words_and_starts_nothing(
    login, api_for, alice, memory_cluster, fake_template
):
    from html import unescape

    job = running_job(api_for(alice), memory_cluster)
    client = login(alice)
    asked = {"prompts": "12", "concurrency": "abc", "output_len": "600"}
    answer = client.post(reverse("jobs:load_test", args=[job.pk]), asked)
    assert answer.status_code == 302 and answer["Location"].endswith(
        "?prompts=12&concurrency=abc&output_len=600#load-test"
    )
    told = " ".join(unescape(client.get(answer["Location"]).content.decode()).split())
    assert (
        "No load test started: At once: Enter a whole number. "
        "Output tokens: Ensure this value is less than or equal to 512." in told
    )
    assert not job.events.filter(message__startswith="Load test").exists()


def test_the_load_test_form_shows_the_valid_values_of_the_address_and_defaults_for_the_rest():
    from django.http import QueryDict

    from jobs.forms import LoadTestForm

    shown = {f.name: f.value() for f in LoadTestForm.remembered(QueryDict("prompts=12&concurrency=999&output_len=x"))}
    assert shown == {"prompts": 12, "concurrency": 8, "output_len": 64}
    assert {f.name: f.value() for f in LoadTestForm.remembered(QueryDict(""))} == shown | {"prompts": 64}


def test_other_students_cannot_see_or_cancel_a_fake_kind_job(
    client, api_for, alice, carol, memory_cluster, fake_template
):
    created = api_for(alice).post("/api/v1/jobs/", {"template": "count", "cluster": "memory"}, "json")
    job_id = created.json()["id"]
    assert client.post(f"/api/v1/jobs/{job_id}/cancel/").status_code in (401, 403)  # anonymous
    assert api_for(carol).get(f"/api/v1/jobs/{job_id}/").status_code == 404
    assert api_for(carol).post(f"/api/v1/jobs/{job_id}/cancel/").status_code == 404
    assert Job.objects.get(pk=job_id).cancel_requested_at is None


def test_instructor_previews_and_publishes_with_the_kinds_own_checks(login, instructor, course, fake_template):
    client = login(instructor)
    edit = reverse("jobs:template_edit", args=[course.slug, fake_template.slug])
    html = client.get(edit).content.decode()
    assert "count to 3" in html  # the kind's preview, with the defaults

    broken = editor_data_of(fake_template, course, body='{"run": "{missing}"}', action="publish")
    response = client.post(edit, broken)
    assert "whose {fields} are parameters" in " ".join(response.context["form"].errors["body"])
    fake_template.refresh_from_db()
    assert fake_template.status == JobTemplate.Status.PUBLISHED and fake_template.body == BODY


def test_a_kind_nobody_registered_is_named_in_the_refusal(alice, course):
    with pytest.raises(BackendError, match=r"This portal has no backend for fake clusters yet\."):
        kinds.kind_of("fake")


def test_a_registered_kind_is_offered_by_the_admin_and_the_template_editor_and_needs_no_migration(fake_kind):
    from django.core.management import call_command

    assert ("fake", "Memory (a test's kind)") in Cluster._meta.get_field("kind").choices
    assert ("fake", "Memory (a test's kind)") in JobTemplate._meta.get_field("backend").choices
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # exits non-zero if a migration is due


def test_instructor_writes_a_template_for_the_kind_in_the_editor_and_previews_it_live(
    login, instructor, course, fake_kind
):
    client = login(instructor)
    form = editor_data(course, params=PARAMETERS, name="Count", slug="count", backend="fake", body=BODY, max_gpus=2)
    new = client.post(reverse("jobs:template_new", args=[course.slug]), form)
    assert new.status_code == 302, new.content.decode()[-2000:]
    assert JobTemplate.objects.get(slug="count").backend == "fake"
    preview = client.post(reverse("jobs:template_preview", args=[course.slug]), form).content.decode()
    assert "count to 3" in preview  # the kind's own preview of the editor's text, nothing saved

    slurm = {**form, "backend": "", "body": "echo {{ steps }}\n"}  # no backend: what a new template is written for
    assert "echo 3" in client.post(reverse("jobs:template_preview", args=[course.slug]), slurm).content.decode()


def test_admin_adds_a_cluster_of_the_kind_on_the_admin_page(login, admin_user, fake_kind):
    client = login(admin_user)
    body = client.get("/admin/clusters/cluster/add/").content.decode()
    assert '<option value="fake">Memory (a test&#x27;s kind)</option>' in body and "kind-fake" in body
    form = {"name": "memory", "kind": "fake", "enabled": "on", "lab_dir": "/tmp/memory", "max_gpus": "2",
            "accounts-TOTAL_FORMS": "0", "accounts-INITIAL_FORMS": "0"}  # fmt: skip
    response = client.post("/admin/clusters/cluster/add/", form)
    assert response.status_code == 302, response.content.decode()[-3000:]
    saved = Cluster.objects.get(name="memory")
    assert saved.kind == "fake" and saved.lab_dir == "/tmp/memory"


def test_the_kind_s_own_setting_is_typed_on_the_admin_page_and_read_by_the_kind(
    login, admin_user, alice, course, fake_template, fake_kind
):
    """A setting declared in tests/kinds/fake/settings.py alone (no shared model, migration or admin edit): the admin
    page draws it, validates it and keeps it; the kind reads it; a student's launch obeys it."""
    client = login(admin_user)
    form = {"name": "memory", "kind": "fake", "enabled": "on", "lab_dir": "/tmp/memory", "max_gpus": "99",
            "accounts-TOTAL_FORMS": "0", "accounts-INITIAL_FORMS": "0"}  # fmt: skip
    refused = client.post("/admin/clusters/cluster/add/?kind=fake", form).content.decode()
    assert "GPUs a job may hold" in refused and "Ensure this value is less than or equal to 8." in refused
    assert client.post("/admin/clusters/cluster/add/?kind=fake", {**form, "max_gpus": "4"}).status_code == 302
    cluster = Cluster.objects.get(name="memory")
    assert cluster.kind_settings == {"max_gpus": 4}
    account = ClusterAccount(cluster=cluster, username="memsvc", auth_method=AuthMethod.PASSWORD)
    account.set_secret("unused")
    account.save()
    course.clusters.add(cluster)

    url = reverse("jobs:launch", args=[course.slug, fake_template.slug])
    assert login(alice).post(url, {"cluster": cluster.pk, "param_steps": 7, "param_gpus": 3}).status_code == 302
    refused = login(alice).post(url, {"cluster": cluster.pk, "param_steps": 7, "param_gpus": 5}).content.decode()
    assert "The memory cluster holds at most 4 GPUs a job; ask for 4 or fewer." in refused


def test_the_kind_s_detected_setting_is_kept_from_test_connection_and_shown_not_typed(
    login, admin_user, memory_cluster, fake_kind
):
    from clusters import services

    Cluster.objects.filter(pk=memory_cluster.pk).update(kind_settings={"max_gpus": 3})
    services.save_connection_facts(memory_cluster, kinds.get_backend(memory_cluster).test_connection())
    assert Cluster.objects.get(pk=memory_cluster.pk).kind_settings == {"max_gpus": 3, "slots_free": 8}
    client = login(admin_user)
    change = f"/admin/clusters/cluster/{memory_cluster.pk}/change/"
    page = client.get(change).content.decode()
    assert "8 slots free" in page and 'name="slots_free"' not in page  # words, no input
    account = memory_cluster.service_account()
    form = {"name": "memory", "enabled": "on", "lab_dir": "/tmp/memory", "max_gpus": "2", "slots_free": "1",
            "run_as": memory_cluster.run_as, "accounts-TOTAL_FORMS": "1", "accounts-INITIAL_FORMS": "1",
            "accounts-0-id": str(account.pk), "accounts-0-cluster": str(memory_cluster.pk),
            "accounts-0-username": "memsvc", "accounts-0-auth_method": "password"}  # fmt: skip
    response = client.post(change, form)
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert Cluster.objects.get(pk=memory_cluster.pk).kind_settings == {"max_gpus": 2, "slots_free": 8}


def test_a_cluster_file_gives_the_kind_s_setting_by_the_key_the_kind_names(tmp_path, fake_kind):
    from clusters.clusters_d import ClusterFileError, parse_file, sync_directory

    path = tmp_path / "memory.yml"
    path.write_text("v2:\n  job: {adapter: fake, max_gpus: 6}\n")
    sync_directory(tmp_path, link_courses=lambda cluster, slugs: None)
    assert Cluster.objects.get(name="memory").kind_settings == {"max_gpus": 6}
    path.write_text("v2:\n  job: {adapter: fake, max_gpus: many}\n")
    with pytest.raises(ClusterFileError, match=r"memory\.yml: job\.max_gpus: Enter a whole number\."):
        parse_file(path)
