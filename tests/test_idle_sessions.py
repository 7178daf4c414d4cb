"""Interactive sessions' own idle rule (sessions/idle_sessions.py): a JupyterLab whose kernels did nothing and whose
GPUs stayed idle for the course's session limit is ended through the normal cancel path, with the numbers in its
event; busy kernels, recent kernel activity, busy GPUs, a server that does not answer, batch jobs and courses without
the rule end nothing; the pass's queries do not grow with sessions. Kernel activity is what Jupyter's /api/kernels
answers (faked here at that one call; tests/integration/test_notebook_idle.py asks a real server)."""

from datetime import timedelta

import pytest
import requests
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.choices import EventKind, JobState, SessionKind
from courses import budgets
from courses.models import Course
from jobs.models import Job, JobEvent
from sessions import idle_sessions

from .test_idle_rule import utilization

pytestmark = pytest.mark.django_db


@pytest.fixture
def rule(course, sleep_template):
    Course.objects.filter(pk=course.pk).update(session_idle_minutes=20, idle_util_below=10)
    sleep_template.session = SessionKind.JUPYTERLAB
    sleep_template.save()
    return course


def session(make_job, owner, *, minutes: float = 60, gpus: int = 1):
    job = make_job(owner, gpus_per_node=gpus)
    started = timezone.now() - timedelta(minutes=minutes)
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING, started_at=started, scheduler_id=f"s{job.short_id}")
    job.refresh_from_db()
    return job


def kernels(busy=False, minutes_ago=None):
    def answer(job):
        return busy, (timezone.now() - timedelta(minutes=minutes_ago)) if minutes_ago is not None else None

    return answer


def test_idle_kernels_and_gpus_end_the_session_with_the_numbers(rule, alice, make_job):
    job = session(make_job, alice)
    utilization(job, timezone.now(), 25, 2, 2)
    assert idle_sessions.run(kernel_activity=kernels(minutes_ago=30)) == [str(job.pk)]
    event = JobEvent.objects.get(job=job, kind=EventKind.CANCEL)
    assert event.actor is None
    assert "kernels did nothing for 30 minutes" in event.message and "below 10 %" in event.message
    assert "idle for 20 minutes" in event.message
    assert Job.objects.get(pk=job.pk).cancel_requested_at is not None


@pytest.mark.parametrize(
    ("activity", "util"),
    [
        (kernels(busy=True, minutes_ago=30), 2),  # a cell still running
        (kernels(minutes_ago=5), 2),  # typed into a kernel five minutes ago
        (kernels(minutes_ago=30), 60),  # the GPU works (a training loop outside the kernels)
    ],
)
def test_a_session_in_use_runs_on(rule, alice, make_job, activity, util):
    job = session(make_job, alice)
    utilization(job, timezone.now(), 25, util, util)
    assert idle_sessions.run(kernel_activity=activity) == []
    assert not JobEvent.objects.filter(job=job, kind=EventKind.CANCEL).exists()


def test_a_server_that_does_not_answer_ends_nothing(rule, alice, make_job):
    job = session(make_job, alice)
    utilization(job, timezone.now(), 25, 2, 2)

    def unreachable(job):
        raise requests.ConnectionError("connection refused")

    assert idle_sessions.run(kernel_activity=unreachable) == []


def test_a_cpu_session_is_judged_by_its_kernels_alone(rule, alice, make_job):
    job = session(make_job, alice, gpus=0)
    assert idle_sessions.run(kernel_activity=kernels()) == [str(job.pk)]  # no kernel ever started


def test_young_sessions_batch_jobs_and_courses_without_the_rule_are_left_alone(rule, alice, make_job, sleep_template):
    session(make_job, alice, minutes=10, gpus=0)  # younger than the limit
    assert idle_sessions.run(kernel_activity=kernels()) == []
    Course.objects.filter(pk=rule.pk).update(session_idle_minutes=None)
    session(make_job, alice, gpus=0)
    assert idle_sessions.run(kernel_activity=kernels()) == []
    Course.objects.filter(pk=rule.pk).update(session_idle_minutes=20)
    sleep_template.session = SessionKind.BATCH
    sleep_template.save()
    assert idle_sessions.run(kernel_activity=kernels()) == []


def test_the_pass_reads_with_constant_queries(rule, alice, bob, make_job):
    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            idle_sessions.run(kernel_activity=kernels(busy=True))
        return len(ctx)

    for owner in (alice, bob):
        utilization(session(make_job, owner), timezone.now(), 25, 2, 2)
    two = queries()
    for owner in (alice, bob, alice):
        utilization(session(make_job, owner), timezone.now(), 25, 2, 2)
    assert queries() == two


@pytest.mark.parametrize("value", [0, 24 * 60 + 1])
def test_a_session_limit_out_of_range_is_refused(value):
    assert "session_idle_minutes" in budgets.setting_errors({"session_idle_minutes": value})
