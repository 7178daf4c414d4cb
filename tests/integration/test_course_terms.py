"""Course terms on the real stack: a job running on SLURM when its course's term ends is cancelled by the beat
task in the Celery worker, with an event saying why; launches outside the term and changes to an ended course are
refused through the pages and the API; copying to a new term carries exactly the templates, clusters, limits and
settings."""

from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from core.choices import EventKind, JobState
from courses.models import Course, QuotaChange, QuotaOverride, Role
from jobs import term_end
from jobs.models import Job, JobTemplate
from tests.integration.jobs_api import launch, read_whole_log
from tests.kind_settings import set_course

from .conftest import slurm, wait_for

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def set_term(course, starts, ends):
    Course.objects.filter(pk=course.pk).update(term_starts_at=starts, term_ends_at=ends)
    course.refresh_from_db()


def test_job_running_when_the_term_ends_is_cancelled_with_the_reason(
    worker, api_for, alice, cluster, sleep_template, course, job_state
):
    from workers.tasks import check_terms

    now = timezone.now()
    set_term(course, now - HOUR, now + HOUR)
    job = job_state(launch(api_for, alice, seconds=300, message="still-training"), "running")
    # A short term: it ends a moment from now, while the job runs.
    ends = timezone.now() + timedelta(seconds=2)
    set_term(course, now - HOUR, ends)
    wait_for(lambda: timezone.now() > ends, timeout=10, what="the term's end")
    check_terms.delay()  # what beat sends every TERM_CHECK_INTERVAL_SECONDS, run by the worker
    job = job_state(job, JobState.CANCELLED, timeout=90)
    state = slurm("squeue", "--states=all", "--noheader", f"--jobs={job.scheduler_id}", "--format=%T").strip()
    assert state in {"CANCELLED", "COMPLETING", ""}  # "" once SLURM has forgotten the finished job
    events = list(job.events.values_list("kind", "to_state", "message"))
    cancels = list(job.events.filter(kind=EventKind.CANCEL))
    assert len(cancels) == 1, events
    event = cancels[0]
    assert event.actor is None and f"The term of {course.name} ended on" in event.message
    # Run again, late: nothing more happens, and the job's history and log stay readable.
    assert term_end.run().cancelled == 0
    assert job.events.filter(kind=EventKind.CANCEL).count() == 1
    assert api_for(alice).get(f"/api/v1/jobs/{job.pk}/").json()["state"] == "cancelled"
    assert "start on" in read_whole_log(api_for, alice, job)


def test_launch_outside_the_term_is_refused_by_form_and_api(login, api_for, alice, cluster, sleep_template, course):
    form_url = reverse("jobs:launch", args=[course.slug, sleep_template.slug])
    form = {"cluster": cluster.pk, "param_seconds": 1, "param_partition": "debug", "param_time_minutes": 2}
    now = timezone.now()
    for starts, ends, why in [(now + DAY, now + 90 * DAY, "opens for launches on"), (now - 90 * DAY, now, "ended on")]:
        set_term(course, starts, ends)
        api = api_for(alice).post(
            "/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local", "params": {}}, format="json"
        )
        assert api.status_code == 403 and why in api.json()["detail"]
        page = login(alice).post(form_url, form)
        assert page.status_code == 400 and why in page.content.decode()
    assert not Job.objects.exists()


def test_ended_course_refuses_changes_through_pages_and_api_and_stays_readable(
    login, api_for, instructor, alice, cluster, sleep_template, course
):
    now = timezone.now()
    set_term(course, now - HOUR, now + HOUR)
    job = launch(api_for, alice, seconds=1)
    set_term(course, now - 90 * DAY, now - timedelta(seconds=1))
    teacher = login(instructor)
    refused = [
        teacher.post(reverse("courses:quotas", args=[course.slug]), {"max_concurrent_jobs": 9, "max_gpus": 9}),
        teacher.post(reverse("courses:roster", args=[course.slug]), {}),
        teacher.post(reverse("jobs:template_edit", args=[course.slug, sleep_template.slug]), {"name": "X"}),
        teacher.post(reverse("jobs:template_status", args=[course.slug, sleep_template.slug]), {"action": "unpublish"}),
        teacher.post(reverse("jobs:template_new", args=[course.slug]), {"name": "X"}),
    ]
    assert [r.status_code for r in refused] == [403] * 5
    assert all("read-only" in r.content.decode() for r in refused)
    clone = api_for(alice).post(f"/api/v1/jobs/{job.pk}/clone/", {"params": {}}, format="json")
    assert clone.status_code == 403 and "ended on" in clone.json()["detail"]
    assert not QuotaChange.objects.exists() and not QuotaOverride.objects.exists()
    assert JobTemplate.objects.get(pk=sleep_template.pk).name == "Sleep and echo"
    assert Job.objects.count() == 1
    # What stays: the course page, its report, the job's page and its API record.
    for url in [
        reverse("courses:jobs", args=[course.slug]),
        reverse("telemetry:report", args=[course.slug]),
        reverse("jobs:template_list", args=[course.slug]),
        job.get_absolute_url(),
    ]:
        assert teacher.get(url).status_code == 200, url
    assert login(alice).get(job.get_absolute_url()).status_code == 200
    assert api_for(alice).get(f"/api/v1/jobs/{job.pk}/").status_code == 200


def test_copy_to_a_new_term_carries_exactly_templates_clusters_limits_and_settings(
    login, instructor, alice, bob, cluster, sleep_template, course, api_for
):
    from jobs.builtin import load_builtin_templates

    shared = {t.pk for t in load_builtin_templates([course])}
    Course.objects.filter(pk=course.pk).update(max_gpus=3, description="Week 1: DDP")
    set_course(course, max_pods=7, save=True)
    QuotaOverride.objects.create(course=course, user=alice, max_gpus=1)
    now = timezone.now()
    set_term(course, now - HOUR, now + HOUR)
    launch(api_for, alice, seconds=1)
    set_term(course, now - 90 * DAY, now - timedelta(seconds=1))
    starts, ends = now + DAY, now + 120 * DAY
    response = login(instructor).post(
        reverse("courses:copy", args=[course.slug]),
        {
            "name": "HPC Lab, spring",
            "slug": "hpc-spring",
            "term_starts_at": timezone.localtime(starts).strftime("%Y-%m-%dT%H:%M"),
            "term_ends_at": timezone.localtime(ends).strftime("%Y-%m-%dT%H:%M"),
        },
    )
    assert response.status_code == 302
    new = Course.objects.get(slug="hpc-spring")
    assert new.name == "HPC Lab, spring" and new.term_starts_at.date() == starts.date()
    assert (new.max_gpus, new.kind_settings["kubernetes"]["max_pods"], new.description) == (3, 7, "Week 1: DDP")
    assert list(new.clusters.all()) == [cluster]
    assert list(new.enrollments.values_list("user__username", "role")) == [("ines", Role.INSTRUCTOR)]
    assert not new.jobs.exists() and not new.quota_overrides.exists() and not new.quota_changes.exists()
    own = new.templates.get(builtin=False)
    assert own.pk != sleep_template.pk
    assert (own.body, own.parameters, own.status) == (sleep_template.body, sleep_template.parameters, "published")
    assert set(new.templates.values_list("pk", flat=True)) == {own.pk, *shared}  # built-in ones: shared
    assert list(sleep_template.courses.all()) == [course]  # the old term's template is untouched
    # Copying again with the same slug is refused and changes nothing.
    again = login(instructor).post(reverse("courses:copy", args=[course.slug]), {"name": "x", "slug": "hpc-spring"})
    assert again.status_code == 400 and "exists already" in again.content.decode()
    assert Course.objects.count() == 2
