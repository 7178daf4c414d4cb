"""Cancelling: immediately for a job not yet submitted, through the scheduler (scancel) otherwise.

A job with no scheduler id yet belongs to the submit task: the request recorded on the row is what that task
reads under its lock, so such a job ends `cancelled` without reaching the scheduler (see jobs/submission.py).
A request that finds the row locked by a submit in progress is recorded by the cancel task instead, so a page
never waits for an sbatch. A stop the portal asks for itself (a course rule: the term ended, a budget's grace, idle
GPUs) always leaves a cancel event without an actor, whose message is the rule's reason.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from clusters.kinds import get_backend
from core import failpoints
from core.choices import TERMINAL_STATES, EventKind, JobState

from . import enqueue
from .models import Job
from .polling import apply_status
from .states import record, transition
from .submission import CANCELLED_BEFORE

CANCELLING = "Cancelling: the cluster will stop the job in a moment."
DEFAULT_WHY = "Cancel requested."


class CancelRefused(Exception):
    pass


def request_cancel(user, job: Job, *, why: str = DEFAULT_WHY) -> str:
    """Ask for the job to stop; returns what to tell the user. `why` is the cancel event's message."""
    if job.state in TERMINAL_STATES:
        raise CancelRefused(f"This job already ended ({job.get_state_display()}).")
    before = "Cancelled before it was submitted."
    if job.state == JobState.QUEUED:
        with transaction.atomic():
            if user is None:  # the portal's stops (course rules) always leave their request, reason and all
                record(job, EventKind.CANCEL, why)
            message = before if why == DEFAULT_WHY else f"{why} {before}"
            if transition(job, JobState.CANCELLED, actor=user, message=message):
                return CANCELLED_BEFORE
            transaction.set_rollback(True)  # moved by someone else first: the request is recorded below instead
    with transaction.atomic():
        if not Job.objects.select_for_update(skip_locked=True).filter(pk=job.pk).exists():
            # A worker holds the row while its sbatch runs: the worker records the request once that is done
            # (the job then has its scheduler id), so this request never waits on SSH.
            enqueue.cancel(job.pk, user.pk if user else None, why)
            return CANCELLING
        if not _record_request(job.pk, user, why):
            return "Cancellation is already under way."
        enqueue.cancel(job.pk)
        failpoints.pause("cancel.before_commit")  # tests: hold the row lock while a submit looks at the row
    return CANCELLING


def _record_request(job_id, user, why: str) -> bool:
    with transaction.atomic():
        asked = (
            Job.objects.filter(pk=job_id, cancel_requested_at__isnull=True)
            .exclude(state__in=TERMINAL_STATES)
            .update(cancel_requested_at=timezone.now())
        )
        if asked:
            record(Job.objects.get(pk=job_id), EventKind.CANCEL, why, actor=user)
    return bool(asked)


def cancel_on_cluster(job_id, actor_id=None, why: str = "") -> None:
    """`why` (and `actor_id`): a request that could not be recorded because a submit held the row; recorded here,
    once that submit is done."""
    if why:
        actor = get_user_model().objects.filter(pk=actor_id).first() if actor_id else None
        _record_request(job_id, actor, why)
    job = Job.objects.select_related("cluster", "account").filter(pk=job_id).first()
    if job is None or job.state in TERMINAL_STATES:
        return
    if not job.scheduler_id:
        # The submit task honours the request under its row lock; wake one in case none is waiting to run.
        enqueue.submit(job.pk)
        return
    backend = get_backend(job.cluster, job.account)
    status = backend.cancel(job.scheduler_id) or backend.poll([job.scheduler_id]).get(job.scheduler_id)
    if status is not None and status.state in TERMINAL_STATES:
        apply_status(job, status)


def cancel_never_starting(job: Job) -> bool:
    """Cancel a job flagged as never starting (jobs/never_starts.py) past its grace period, once, saying why."""
    with transaction.atomic():
        locked = (
            Job.objects.select_for_update(skip_locked=True)
            .filter(
                pk=job.pk, state=JobState.PENDING, never_starts_since__isnull=False, cancel_requested_at__isnull=True
            )
            .first()
        )
        if locked is None:
            return False
        request_cancel(None, locked, why=f"Cancelled by the portal: {locked.never_starts_reason}")
    return True
