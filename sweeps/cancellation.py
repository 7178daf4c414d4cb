"""Cancelling a whole sweep: one scancel of the array's own id stops every task; the poll then moves each run. A
sweep going run by run has each run let out cancelled as a single job is.

Before the array is on the cluster, the request is recorded on the sweep, which its submit task reads under its lock
(sweeps/submission.py), and the runs still queued end cancelled at once.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from clusters.kinds import get_backend
from core.choices import ACTIVE_STATES, EventKind, JobState
from core.enqueue import send_on_commit
from jobs.models import Job
from jobs.states import record_many, transition

from . import release
from .models import Sweep, SweepState, SweepSubmission

CANCEL_SWEEP = "sweeps.tasks.cancel_sweep"
SUBMIT_SWEEP = "sweeps.tasks.submit_sweep"


class CancelRefused(Exception):
    pass


def request_cancel(user, sweep: Sweep) -> str:
    """Ask for every unfinished run of the sweep to stop; what to tell the user."""
    with transaction.atomic():
        asked = Sweep.objects.filter(pk=sweep.pk, cancel_requested_at__isnull=True).update(
            cancel_requested_at=timezone.now()
        )
        if not asked:
            raise CancelRefused("Cancelling this sweep is already under way.")
        runs = list(Job.objects.filter(sweep_run__sweep=sweep, state__in=ACTIVE_STATES))
        if not runs:
            raise CancelRefused("Every run of this sweep has already ended.")
        record_many(runs, EventKind.CANCEL, f"Cancel requested for the whole sweep {sweep.short_id}.", actor=user)
        Job.objects.filter(pk__in=[r.pk for r in runs]).update(cancel_requested_at=timezone.now())
        for job in runs:
            if job.state == JobState.QUEUED:
                transition(job, JobState.CANCELLED, actor=user, message="Cancelled with its sweep before submission.")
        if sweep.state in (SweepState.QUEUED, SweepState.SUBMITTING):
            send_on_commit(SUBMIT_SWEEP, str(sweep.pk))  # its submit task honours the request under its lock
        if sweep.submission == SweepSubmission.RUNS:
            release.cancel_runs_let_out(sweep)
        elif sweep.state not in (SweepState.QUEUED, SweepState.SUBMITTING):
            send_on_commit(CANCEL_SWEEP, str(sweep.pk))
    return "Cancelling every run of the sweep: the cluster stops them in a moment."


def cancel_on_cluster(sweep_id) -> None:
    """One scancel of the array: every task, waiting or running."""
    sweep = Sweep.objects.select_related("cluster", "account").filter(pk=sweep_id).first()
    if sweep is None or not sweep.scheduler_id:
        return
    get_backend(sweep.cluster, sweep.account).cancel(sweep.scheduler_id)
