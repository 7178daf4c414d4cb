"""Idle reaping on the real stack: the collector streams the stand-in nvidia-smi over SSH and stores the buckets;
the Celery worker's per-minute pass warns the job holding only an idle GPU, shows "Keep it" on its page and tells the
student, then cancels it through SLURM with the numbers in its event, while the job on a working GPU runs on.

The node is shared with the other lanes' jobs, so the two jobs get whichever GPUs are free: the stand-in is told to
replay, on each, the figures of a recorded GPU that idles (GPU 3) or trains (GPU 0) (scripts/fixtures/nvidia-smi)."""

from __future__ import annotations

import re

import pytest

from core.choices import EventKind, JobState
from courses.models import Course
from jobs.models import IdleWarning, Job
from notifications.models import Notification
from tests.integration.jobs_api import launch

from .conftest import slurm, wait_for
from .gpu_replays import IDLE, TRAINING, gpus_of, replay
from .test_series_store import start_collector


def evaluated(predicate):
    """Ask the worker for a pass (what beat sends every minute), then look."""
    from workers.tasks import evaluate_budgets

    def check():
        evaluate_budgets.delay()
        return predicate()

    return check


@pytest.mark.slurm_gpu_replays
@pytest.mark.timeout(400)
def test_idle_gpu_is_warned_then_cancelled_and_a_busy_one_runs_on(
    worker, login, api_for, alice, bob, course, cluster, sleep_template, job_state, portal_env, tmp_path
):
    Course.objects.filter(pk=course.pk).update(idle_util_below=10, idle_warn_minutes=1, idle_cancel_minutes=1)
    collector = start_collector(portal_env, tmp_path / "collector.log")
    try:
        busy = job_state(launch(api_for, bob, gpus_per_node=1, seconds=400, time_minutes=10), JobState.RUNNING)
        idle = job_state(launch(api_for, alice, gpus_per_node=1, seconds=400, time_minutes=10), JobState.RUNNING)
        (busy_gpu,), (idle_gpu,) = gpus_of(busy.scheduler_id), gpus_of(idle.scheduler_id)
        replay({busy_gpu: TRAINING, idle_gpu: IDLE})
        try:
            warning = wait_for(
                evaluated(lambda: IdleWarning.objects.filter(job=idle, warned_at__isnull=False).first()),
                timeout=150,
                interval=5,
                what="the idle warning",
            )
        except AssertionError:
            from telemetry.models import SeriesChunk

            chunks = list(SeriesChunk.objects.filter(job=idle).order_by("start"))
            util = [(c.start, {k: t["y"][-3:] for k, t in c.series.get("gpu-util", {}).items()}) for c in chunks]
            raise AssertionError(
                f"{len(chunks)} chunks; {util[-3:]}; {Job.objects.get(pk=idle.pk).started_at}"
            ) from None
        assert warning.max_util < 10 and warning.idle_minutes >= 1
        page = login(alice).get(idle.get_absolute_url()).content.decode()
        assert 'id="idle-warning"' in page and "Keep it" in page
        told = wait_for(lambda: Notification.objects.filter(user=alice, event="idle_warning").first(), what="notice")
        assert "below 10 %" in told.text
        _ask_until_cancelled(idle)
        # Its GPU is another job's once SLURM frees it: from now on it shows its own recorded figures again.
        replay({busy_gpu: TRAINING})
        idle = job_state(idle, JobState.CANCELLED, timeout=150)
        event = idle.events.get(kind=EventKind.CANCEL)
        assert event.actor is None and "stayed below 10 % utilization for" in event.message
        # The highest is below the rule, whatever the GPU showed in the seconds before the replay reached it.
        assert float(re.search(r"\(highest ([\d.]+) %\)", event.message).group(1)) < 10, event.message
        state = slurm("squeue", "--states=all", "--noheader", f"--jobs={idle.scheduler_id}", "--format=%T").strip()
        assert state in {"CANCELLED", "COMPLETING", ""}
        busy.refresh_from_db()
        # The portal never asked to stop the working job (its state is not asserted: on a SLURM shared with other
        # test runs, their clean-up may scancel it).
        assert busy.cancel_requested_at is None and not busy.events.filter(kind=EventKind.CANCEL).exists()
        assert not IdleWarning.objects.filter(job=busy, warned_at__isnull=False).exists()
    finally:
        replay({})  # before the clean-up cancels the busy job and frees its GPU
        collector.stop()


def _ask_until_cancelled(job) -> None:
    wait_for(
        evaluated(lambda: Job.objects.filter(pk=job.pk, cancel_requested_at__isnull=False).exists()),
        timeout=150,
        interval=1,  # then its GPU is released within seconds, and the stand-in must stop calling it idle first
        what="the idle job to be cancelled",
    )
