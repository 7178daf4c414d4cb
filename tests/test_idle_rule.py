"""Idle reaping as course policy, from the GPU utilization stored for running jobs: warned after N minutes below
X %, cancelled M minutes later with an event carrying the numbers, unless kept or busy again; "Keep it" is the
owner's (and the course's teachers'); out-of-range rules refused; the pass's queries do not grow with jobs."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from core.choices import EventKind, JobState
from core.figures import percent_under
from courses import budgets
from courses.models import Course
from jobs.models import IdleWarning, Job, JobEvent
from jobs.signals import idle_warned
from notifications.events import Channel
from notifications.models import Notification
from telemetry import idle_reaping as idle_pass
from telemetry.models import SeriesChunk

pytestmark = pytest.mark.django_db


@pytest.fixture
def rule(course):
    Course.objects.filter(pk=course.pk).update(idle_util_below=10, idle_warn_minutes=5, idle_cancel_minutes=3)
    course.refresh_from_db()
    return course


@pytest.fixture
def heard():
    got = []
    idle_warned.connect(lambda sender, **kw: got.append(kw), dispatch_uid="test-idle", weak=False)
    yield got
    idle_warned.disconnect(dispatch_uid="test-idle")


def running(make_job, owner, minutes: float = 30):
    job = make_job(owner, gpus_per_node=2)
    started = timezone.now() - timedelta(minutes=minutes)
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING, started_at=started, scheduler_id=f"i{job.short_id}")
    job.refresh_from_db()
    return job


def utilization(job, until, minutes: float, util0: float, util1: float | None = None):
    """Stored ten-second buckets of both GPUs for the `minutes` before `until`."""
    start = until - timedelta(minutes=minutes)
    xs = [int((start + timedelta(seconds=10 * i)).timestamp() * 1000) for i in range(int(minutes * 6))]
    series = {"gpu-util": {"n0:0": {"name": "GPU 0", "x": xs, "y": [util0] * len(xs)}}}
    series["gpu-util"]["n0:1"] = {"name": "GPU 1", "x": xs, "y": [util1 if util1 is not None else util0] * len(xs)}
    SeriesChunk.objects.create(job=job, start=start, end=until, series=series)


def test_idle_job_is_warned_then_cancelled_with_the_numbers(rule, alice, make_job, heard):
    job = running(make_job, alice)
    now = timezone.now()
    utilization(job, now - timedelta(minutes=6), 20, 90)  # busy first
    utilization(job, now, 6, 3, 7)  # then both GPUs below 10 % for six minutes
    report = idle_pass.run(now)
    assert report.warned == [str(job.pk)] and report.cancelled == []
    warning = IdleWarning.objects.get(job=job)
    assert warning.active and warning.idle_minutes == pytest.approx(6, abs=0.3) and warning.max_util == 7
    assert "below 10 % for 6 minutes" in heard[0]["text"] and "Keep it" in heard[0]["text"]
    assert idle_pass.run(now + timedelta(minutes=1)).cancelled == []  # within M minutes of the warning
    utilization(job, now + timedelta(minutes=4), 4, 2)
    assert idle_pass.run(now + timedelta(minutes=4)).cancelled == [str(job.pk)]
    event = JobEvent.objects.get(job=job, kind=EventKind.CANCEL)
    assert "below 10 % utilization for 10 minutes (highest 7 %)" in event.message and event.actor is None


def test_a_highest_just_under_the_rule_never_reads_as_the_rule(rule, alice, make_job, heard, login):
    job = running(make_job, alice)
    now = timezone.now()
    utilization(job, now - timedelta(minutes=6), 20, 90)
    utilization(job, now, 6, 9.96, 0.25)  # a ten-second mean just under 10 %, beside an idle GPU
    idle_pass.run(now)
    assert "below 10 % for 6 minutes (highest 9.9 %)" in heard[0]["text"]
    assert "minutes (highest 9.9 %)" in login(alice).get(job.get_absolute_url()).content.decode()
    utilization(job, now + timedelta(minutes=4), 4, 0)
    idle_pass.run(now + timedelta(minutes=4))
    assert "(highest 9.9 %)" in JobEvent.objects.get(job=job, kind=EventKind.CANCEL).message
    assert [percent_under(u) for u in (0, 0.25, 7, 9.96, 45.0)] == ["0", "0.2", "7", "9.9", "45"]


def test_an_idle_warning_is_on_the_jobs_timeline_and_in_notifications_once(rule, alice, make_job, login):
    job = running(make_job, alice)
    stale = Job.objects.select_related("idle_warning", "template", "cluster").get(pk=job.pk)  # read by a second pass
    now = timezone.now()
    utilization(job, now, 6, 0)
    idle_pass.run(now)
    idle_pass.run(now + timedelta(seconds=30))
    idle_pass._apply(
        stale,
        rule,
        {int(now.timestamp() * 1000) - 6 * 60_000: 0.0, int(now.timestamp() * 1000): 0.0},
        now,
        idle_pass.Report(),
    )
    notes = JobEvent.objects.filter(job=job, kind=EventKind.NOTE)
    assert [n.message[:23] for n in notes] == ["Idle warning sent to th"] and "below 10 %" in notes[0].message
    assert Notification.objects.filter(user=alice, event="idle_warning", channel=Channel.BROWSER).count() == 1
    login(alice).post(reverse("jobs:keep", args=[job.pk]))
    kept = JobEvent.objects.filter(job=job, kind=EventKind.NOTE).last()
    assert kept.message.startswith("Kept") and kept.actor == alice
    assert "Idle warning sent to the owner" in login(alice).get(job.get_absolute_url()).content.decode()


def test_busy_or_briefly_idle_job_is_left_alone(rule, alice, bob, make_job):
    busy, brief = running(make_job, alice), running(make_job, bob)
    now = timezone.now()
    utilization(busy, now, 10, 3, 55)  # one GPU works
    utilization(brief, now - timedelta(minutes=3), 10, 80)
    utilization(brief, now, 3, 0)  # idle for three minutes only
    assert idle_pass.run(now).warned == [] and not IdleWarning.objects.exists()


def test_keep_it_restarts_the_idle_clock(rule, alice, make_job, login):
    job = running(make_job, alice)
    now = timezone.now()
    utilization(job, now, 6, 0)
    idle_pass.run(now)
    client = login(alice)
    page = client.get(job.get_absolute_url()).content.decode()
    assert 'id="idle-warning"' in page and "Keep it" in page
    assert client.post(reverse("jobs:keep", args=[job.pk])).status_code == 302
    assert not IdleWarning.objects.get(job=job).active
    assert 'id="idle-warning"' not in client.get(job.get_absolute_url()).content.decode()
    later = timezone.now() + timedelta(minutes=4)
    utilization(job, later, 4, 0)
    assert idle_pass.run(later) == idle_pass.Report()  # idle only four minutes since it was kept


def test_gpus_busy_again_withdraw_the_warning(rule, alice, make_job):
    job = running(make_job, alice)
    now = timezone.now()
    utilization(job, now, 6, 0)
    idle_pass.run(now)
    utilization(job, now + timedelta(minutes=1), 1, 60)
    assert idle_pass.run(now + timedelta(minutes=5)).cleared == 1
    assert not IdleWarning.objects.get(job=job).active and Job.objects.get(pk=job.pk).cancel_requested_at is None


def test_keep_is_refused_to_anonymous_and_other_students(client, login, rule, alice, bob, make_job):
    job = running(make_job, alice)
    url = reverse("jobs:keep", args=[job.pk])
    assert "/login/" in client.post(url)["Location"]
    assert login(bob).post(url).status_code == 404
    assert login(bob).get(url).status_code in (404, 405)
    assert not IdleWarning.objects.exists()


@pytest.mark.parametrize(
    "values",
    [{"idle_util_below": 0}, {"idle_util_below": 101}, {"idle_warn_minutes": 0}, {"idle_cancel_minutes": 99999}],
)
def test_idle_rules_out_of_range_are_refused(values):
    assert set(values) <= set(budgets.setting_errors(values))


def test_idle_pass_query_count_does_not_grow_with_jobs(rule, alice, bob, make_job):
    now = timezone.now()

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            idle_pass.run(now)
        return len(captured)

    utilization(running(make_job, alice), now, 2, 50)
    few = queries()
    for owner in (alice, bob, bob):
        utilization(running(make_job, owner), now, 2, 50)
    assert queries() == few
