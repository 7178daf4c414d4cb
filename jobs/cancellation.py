"""Cancelling: immediately for a job not yet submitted, through the scheduler (scancel) otherwise.

A job with no scheduler id yet belongs to the submit task: the request recorded on the row is what that task
reads under its lock, so such a job ends `cancelled` without reaching the scheduler (see jobs/submission.py).
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from clusters.backends import get_backend
from portal import failpoints

from .models import Job
from .polling import apply_status
from .states import TERMINAL_STATES, EventKind, JobState, record, transition


class CancelRefused(Exception):
    pass


def request_cancel(user, job: Job, *, why: str = "Cancel requested.") -> str:
    """Ask for the job to stop; returns what to tell the user. `why` is the cancel event's message."""
    if job.state in TERMINAL_STATES:
        raise CancelRefused(f"This job already ended ({job.get_state_display()}).")
    if job.state == JobState.QUEUED and transition(
        job, JobState.CANCELLED, actor=user, message="Cancelled before it was submitted."
    ):
        return "Cancelled before it reached the cluster."
    with transaction.atomic():
        asked = Job.objects.filter(pk=job.pk, cancel_requested_at__isnull=True).update(
            cancel_requested_at=timezone.now()
        )
        if not asked:
            return "Cancellation is already under way."
        record(job, EventKind.CANCEL, why, actor=user)
        from workers.tasks import cancel_job

        cancel_job.delay_on_commit(str(job.pk))
        failpoints.pause("cancel.before_commit")  # tests: hold the row lock while a submit looks at the row
    return "Cancelling: the cluster will stop the job in a moment."


def cancel_on_cluster(job_id) -> None:
    job = Job.objects.select_related("cluster", "account").filter(pk=job_id).first()
    if job is None or job.state in TERMINAL_STATES:
        return
    if not job.scheduler_id:
        # The submit task honours the request under its row lock; wake one in case none is waiting to run.
        from workers.tasks import submit_job

        submit_job.delay(str(job.pk))
        return
    backend = get_backend(job.cluster, job.account)
    status = backend.cancel(job.scheduler_id) or backend.poll([job.scheduler_id]).get(job.scheduler_id)
    if status is not None and status.state in TERMINAL_STATES:
        apply_status(job, status)
