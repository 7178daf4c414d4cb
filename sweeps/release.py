"""A sweep that goes to its cluster run by run: on a kind without job arrays (Kubernetes), or when it varies a
resource (an array's tasks all hold what its one header asks for). The sweep only decides *when* each run goes: at
most `max_concurrent` of its runs are out at once, in task order, and each run's end lets the next one out. Each run
is then submitted as a single job is (jobs/submission.py: exactly once, a cancel request honoured under its lock),
with the script rendered for its own values.

release() holds the sweep's row lock (SKIP LOCKED), so two messages never let out more than the limit. It is sent at
the launch, when one of the runs ends (endings.py) and by the beat for a sweep that has waited long (submission.py's
resume_stale): a run let out whose submit message died with its worker is sent again then.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.choices import ACTIVE_STATES, JobState
from jobs import enqueue
from jobs.models import Job
from jobs.states import transition
from jobs.submission import Outcome

from .models import Sweep, SweepState

OUT = ACTIVE_STATES - {JobState.QUEUED}  # let out: on its way to the cluster, waiting there or running


def release(sweep_id) -> Outcome:
    with transaction.atomic():
        sweep = (
            Sweep.objects.select_for_update(skip_locked=True)
            .filter(pk=sweep_id, state__in=[SweepState.QUEUED, SweepState.SUBMITTING])
            .first()
        )
        if sweep is None:
            busy = Sweep.objects.filter(pk=sweep_id, state__in=[SweepState.QUEUED, SweepState.SUBMITTING]).exists()
            return Outcome.BUSY if busy else Outcome.NOTHING
        runs = list(Job.objects.filter(sweep_run__sweep=sweep).order_by("sweep_run__index"))
        waiting = [job for job in runs if job.state == JobState.QUEUED]
        out = [job for job in runs if job.state in OUT]
        stale = timezone.now() - timedelta(seconds=settings.GPULAB_SUBMIT_STALE_AFTER)
        # Let out before but still not on the cluster: its message may have died with a worker (sending it twice is
        # harmless, jobs/submission.py).
        send = [job for job in out if job.state == JobState.SUBMITTING and job.updated_at < stale]
        let_out = [] if sweep.cancel_requested_at else waiting[: max(sweep.max_concurrent - len(out), 0)]
        for job in let_out:
            at_once = f"{len(out) + 1} of at most {sweep.max_concurrent} at once"
            if transition(job, JobState.SUBMITTING, message=f"Let out by sweep {sweep.short_id} ({at_once})."):
                out.append(job)
                send.append(job)
        Sweep.objects.filter(pk=sweep.pk).update(state=_state(sweep, runs, waiting, let_out), updated_at=timezone.now())
        for job in send:
            enqueue.submit(job.pk)
    return Outcome.SUBMITTED if let_out else Outcome.NOTHING


def _state(sweep: Sweep, runs: list[Job], waiting: list[Job], let_out: list[Job]) -> str:
    if sweep.cancel_requested_at and all(job.submit_attempts == 0 for job in runs):
        return SweepState.CANCELLED  # none of its runs ever went
    if len(let_out) < len(waiting) and not sweep.cancel_requested_at:
        return SweepState.SUBMITTING  # runs still wait for their turn
    return SweepState.SUBMITTED


def cancel_runs_let_out(sweep: Sweep) -> None:
    """Each run let out is cancelled as a single job is (jobs/cancellation.py): on the cluster, or under its submit's
    row lock if it is still on its way there. Sent once the caller's transaction commits."""
    for job_id in Job.objects.filter(sweep_run__sweep=sweep, state__in=OUT).values_list("pk", flat=True):
        enqueue.cancel(job_id)
