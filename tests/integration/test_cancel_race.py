"""Cancel before submit, and a submission whose worker died, on the real stack: a Celery worker, PostgreSQL,
Redis and SLURM over sshd. Failpoints (core/failpoints.py) hold the race windows open.

The stale-submission sweep is pushed out of reach (SUBMIT_STALE_AFTER_SECONDS=600), so what these tests see is
the submit task's own handling, not the backstop.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from jobs.models import Job

from .conftest import slurm, wait_for
from .jobs_api import launch

NO_SWEEP = {"SUBMIT_STALE_AFTER_SECONDS": "600"}


def on_slurm(job: Job) -> int:
    """How many SLURM jobs carry this job's UUID in their comment (finished ones included)."""
    return slurm("squeue", "--states=all", "--noheader", "--format=%k").split().count(f"gpulab:{job.pk}")


@pytest.fixture
def restarted_worker(worker):
    """The session's worker, restarted with the environment a test gives; back to normal afterwards."""

    def restart(**env: str):
        worker.stop()
        worker.start(**NO_SWEEP, **env)
        return worker

    yield restart
    worker.stop()
    worker.start()


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    "worker_pause, cancel_pause",
    [
        pytest.param("submit.before_lock=3", "", id="cancel-lands-while-the-submit-waits"),
        pytest.param("submit.before_lock=2", "cancel.before_commit=5", id="cancel-holds-the-row-when-the-submit-looks"),
    ],
)
def test_cancel_before_submit_ends_cancelled_and_never_reaches_slurm(
    restarted_worker, worker_pause, cancel_pause, settings, api_for, login, alice, cluster, sleep_template, job_state
):
    restarted_worker(FAILPOINTS=worker_pause)
    settings.GPULAB_FAILPOINTS = cancel_pause  # the web request's own pause, in this process
    job = launch(api_for, alice, seconds=1)
    wait_for(lambda: Job.objects.get(pk=job.pk).state == "submitting", timeout=30, interval=0.05, what="submitting")
    assert login(alice).post(reverse("jobs:cancel", args=[job.pk])).status_code == 302
    job = job_state(job, "cancelled", timeout=60)
    assert job.scheduler_id == "" and on_slurm(job) == 0
    moves = list(job.events.filter(kind="state").values_list("to_state", flat=True))
    assert moves == ["submitting", "cancelled"]
    assert job.events.get(to_state="cancelled").message == "Cancelled before it reached the cluster."
    assert job.events.filter(kind="cancel", actor=alice).exists()


@pytest.mark.timeout(300)
def test_worker_killed_mid_submit_resumes_when_a_worker_is_back(
    restarted_worker, api_for, alice, cluster, sleep_template, job_state
):
    worker = restarted_worker(FAILPOINTS="submit.before_sbatch=120")  # hold the row lock, before sbatch
    job = launch(api_for, alice, seconds=2)
    wait_for(lambda: Job.objects.get(pk=job.pk).submit_attempts, timeout=30, what="the submit to claim the job")
    worker.kill()
    assert Job.objects.get(pk=job.pk).state == "submitting" and on_slurm(job) == 0
    worker.start(**NO_SWEEP)  # a fresh worker (its queue purged): no message for the job is left anywhere
    job = job_state(job, "running", "completed", timeout=60)
    assert on_slurm(job) == 1
    assert job_state(job, "completed", timeout=60).exit_code == 0


@pytest.mark.timeout(240)
def test_cancel_during_the_sbatch_answers_at_once_and_stops_the_job_on_slurm(
    restarted_worker, api_for, login, alice, cluster, sleep_template, job_state
):
    restarted_worker(FAILPOINTS="submit.after_sbatch=10")  # the worker holds the row between sbatch and commit
    job = launch(api_for, alice, seconds=60)
    wait_for(lambda: on_slurm(job) == 1, timeout=30, interval=0.1, what="the sbatch")
    assert login(alice).post(reverse("jobs:cancel", args=[job.pk])).status_code == 302
    assert Job.objects.get(pk=job.pk).state == "submitting"  # the page did not wait for the worker's sbatch
    job = job_state(job, "cancelled", timeout=60)
    assert job.scheduler_id and on_slurm(job) == 1
    states = slurm("squeue", "--states=all", "--noheader", f"--jobs={job.scheduler_id}", "--format=%T").split()
    assert states == ["CANCELLED"]
    assert job.events.filter(kind="cancel", actor=alice).exists()
