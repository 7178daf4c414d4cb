"""GPU-hour budgets on the real stack: a tiny budget burns down under a 2-GPU job running on SLURM, the student is
told it is used up, a new launch is refused by the API and the form with what is left and when it resets, and the
Celery worker's budget pass stops the running job once the course's grace has passed, with an event that says why.
"""

from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from core.choices import EventKind, JobState
from courses.models import BudgetOverrun, BudgetPeriod, Course
from jobs.budgets import standing_of
from jobs.models import Job
from notifications.models import Notification
from tests.integration.jobs_api import launch

from .conftest import SHARED_GPUS_WAIT, slurm, wait_for


@pytest.mark.timeout(300 + SHARED_GPUS_WAIT)  # its two GPUs may wait for the other lanes' jobs, then a grace passes
def test_tiny_budget_refuses_a_launch_and_stops_the_running_job_after_the_grace(
    worker, login, api_for, alice, cluster, sleep_template, course, job_state
):
    from workers.tasks import evaluate_budgets

    # 0.01 GPU-hours = 36 GPU-seconds: a 2-GPU job uses it up in 18 seconds; then a grace of one minute.
    Course.objects.filter(pk=course.pk).update(
        student_gpu_hours=Decimal("0.01"), budget_period=BudgetPeriod.WEEK, budget_grace_minutes=1
    )
    course.refresh_from_db()
    launched = launch(api_for, alice, seconds=300, gpus_per_node=2, partition="gpu")
    job = job_state(launched, JobState.RUNNING, timeout=SHARED_GPUS_WAIT)
    wait_for(lambda: standing_of(course, alice)[0].exhausted, timeout=60, what="the budget to be used up")
    evaluate_budgets.delay()  # what beat sends every minute, run by the worker
    overrun = wait_for(lambda: BudgetOverrun.objects.filter(course=course, student=alice).first(), what="overrun")
    assert Job.objects.get(pk=job.pk).cancel_requested_at is None  # within the grace it keeps running
    told = wait_for(lambda: Notification.objects.filter(user=alice, event="budget_used_up").first(), what="the notice")
    assert (
        told.subject == "GPU-hour budget used up"
        and "running jobs stop after the course's grace of 1 minute(s)" in told.text
    )
    assert job.events.filter(kind=EventKind.NOTE, message__contains="budget is used up").count() == 1

    api = api_for(alice).post(
        "/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local", "params": {}}, format="json"
    )
    assert api.status_code == 403 and "0 left" in api.json()["detail"] and "resets on Mon" in api.json()["detail"]
    form = {"cluster": cluster.pk, "param_seconds": 1, "param_partition": "debug", "param_time_minutes": 2}
    page = login(alice).post(reverse("jobs:launch", args=[course.slug, sleep_template.slug]), form)
    assert page.status_code == 400 and "GPU-hour budget" in page.content.decode()
    assert Job.objects.filter(owner=alice).count() == 1

    wait_for(lambda: (timezone.now() - overrun.since).total_seconds() > 61, timeout=90, what="the grace to pass")
    evaluate_budgets.delay()
    job = job_state(job, JobState.CANCELLED, timeout=90)
    state = slurm("squeue", "--states=all", "--noheader", f"--jobs={job.scheduler_id}", "--format=%T").strip()
    assert state in {"CANCELLED", "COMPLETING", ""}
    cancels = list(job.events.filter(kind=EventKind.CANCEL))
    assert len(cancels) == 1 and cancels[0].actor is None
    assert "GPU-hour budget" in cancels[0].message and "grace of 1 minute(s) has passed" in cancels[0].message
