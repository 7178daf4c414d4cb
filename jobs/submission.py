"""Submitting a queued job to its cluster, exactly once, and never after its owner cancelled it.

queued → submitting is a conditional update, so a duplicate message stops there. The SSH work then runs
under a row lock (SELECT … FOR UPDATE SKIP LOCKED): a second worker skips, and a worker that dies
releases the lock with its connection. A retry looks for the portal's job UUID on the scheduler first
and records what it finds instead of submitting again.

A cancel request recorded on the row (`cancel_requested_at`) is read under that lock before the scheduler
is asked anything, and again before the job is recorded as submitted: a job cancelled before its sbatch
never reaches the scheduler, and one whose sbatch raced the request is cancelled there at once. A row found
locked is never given up on: the caller tries again in a moment (the lock holder may be a cancel request).
"""

from __future__ import annotations

import enum
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from clusters import kinds
from clusters.backends import BackendError
from clusters.backends.base import SubmitRequest
from clusters.kinds import get_backend
from core import failpoints, measurements
from core.choices import EventKind, JobState
from courses.lab_sessions import reservation_for
from jobs import access

from . import enqueue, session_tokens
from .models import Job
from .states import record, transition

logger = logging.getLogger(__name__)

CANCELLED_BEFORE = "Cancelled before it reached the cluster."


class Outcome(enum.Enum):
    SUBMITTED = "submitted"
    CANCELLED = "cancelled"  # a cancel request was honoured instead
    RETRY = "retry"  # a transient failure; the caller schedules another attempt
    BUSY = "busy"  # the row is locked (another worker submitting, or a cancel being recorded): try again soon
    FAILED = "failed"
    NOTHING = "nothing"  # gone, or already done elsewhere


def retry_delay(attempts: int) -> float:
    return settings.GPULAB_SUBMIT_RETRY_DELAY * 2 ** max(attempts - 1, 0)


def next_retry_delay(job_id) -> float:
    """How long the submit task waits after a transient failure: longer with each attempt the row has counted."""
    attempts = Job.objects.filter(pk=job_id).values_list("submit_attempts", flat=True).first() or 1
    return retry_delay(attempts)


def busy_delay(retries: int) -> float:
    """Short: a lock is held for one sbatch or one cancel request, not for minutes."""
    return min(0.5 * 2**retries, 5.0)


def submit(job_id) -> Outcome:
    job = Job.objects.filter(pk=job_id).first()
    # A sweep's run is submitted by its sweep: as a task of its array (sweeps/submission.py, never committed in
    # between states), or here once its sweep has let it out, moving it to submitting (sweeps/release.py).
    if job is None or (job.in_array and job.state != JobState.SUBMITTING):
        return Outcome.NOTHING
    if job.state == JobState.QUEUED:
        transition(job, JobState.SUBMITTING, message=f"Submitting to {job.cluster.display_name}.")
        job.refresh_from_db(fields=["state"])
    if job.state != JobState.SUBMITTING:
        return Outcome.NOTHING
    failpoints.pause("submit.before_lock")
    if not _claim_attempt(job.pk):
        return _busy_or_done(job.pk)
    with transaction.atomic():
        job = (
            Job.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("cluster", "account", "template", "course", "owner")
            .filter(pk=job.pk, state=JobState.SUBMITTING)
            .first()
        )
        if job is None:
            return _busy_or_done(job_id)
        return _submit_locked(job)


def _claim_attempt(job_id) -> bool:
    """Count an attempt, committed before any SSH so a retry after a crash knows to look for an earlier sbatch.

    Only a worker that can lock the row counts one: waiting on a lock must not use up the retries."""
    with transaction.atomic():
        free = Job.objects.select_for_update(skip_locked=True).filter(pk=job_id, state=JobState.SUBMITTING)
        if not free.values_list("pk", flat=True).first():
            return False
        Job.objects.filter(pk=job_id).update(submit_attempts=F("submit_attempts") + 1, updated_at=timezone.now())
    return True


def _busy_or_done(job_id) -> Outcome:
    still_submitting = Job.objects.filter(pk=job_id, state=JobState.SUBMITTING).exists()
    return Outcome.BUSY if still_submitting else Outcome.NOTHING


def _submit_locked(job: Job) -> Outcome:
    if job.cancel_requested_at is not None:
        return _cancel_unsubmitted(job)
    try:
        access.check_launch(job.owner, job.course, job.template, job.cluster)
    except access.LaunchRefused as exc:
        transition(job, JobState.SUBMIT_FAILED, error=str(exc), message=str(exc))
        return Outcome.FAILED
    try:
        backend = get_backend(job.cluster, job.account)
        request = submit_request(job)
        earlier = backend.find_submitted(request) if job.submit_attempts > 1 else None
        failpoints.pause("submit.before_sbatch")
        scheduler_id = earlier or backend.submit(request)
        failpoints.pause("submit.after_sbatch")
    except BackendError as exc:
        return _failed(job, exc)
    measurements.heard_from(job.cluster.name)
    if _cancel_requested(job) and _cancel_on_scheduler(job, backend, scheduler_id):
        return Outcome.CANCELLED
    how = "Found the earlier submission" if earlier else "Submitted"
    into = f", in the lab session's reservation {request.reservation}" if request.reservation else ""
    transition(
        job,
        JobState.PENDING,
        scheduler_id=scheduler_id,
        scheduler_state="PENDING",
        message=f"{how}: scheduler job {scheduler_id}{into}.",
    )
    latency = (timezone.now() - job.created_at).total_seconds()
    transaction.on_commit(lambda: measurements.observe("submit_latency_seconds", latency, job.cluster.name))
    return Outcome.SUBMITTED


def _cancel_requested(job: Job) -> bool:
    """Read again after the sbatch: a request recorded meanwhile means the scheduler must stop the job now."""
    return Job.objects.filter(pk=job.pk).exclude(cancel_requested_at=None).exists()


def _cancel_on_scheduler(job: Job, backend, scheduler_id: str) -> bool:
    """False if scancel failed: the job is then recorded as submitted and the cancel task stops it later."""
    try:
        backend.cancel(scheduler_id)
    except BackendError as exc:
        logger.warning("job %s: cancel right after submission failed: %s", job.pk, exc)
        enqueue.cancel(job.pk)
        return False
    _cancelled(job, scheduler_id, f"Cancelled on the cluster right after its submission (job {scheduler_id}).")
    return True


def _cancel_unsubmitted(job: Job) -> Outcome:
    """Honour a cancel request that came before this attempt's sbatch. Only an earlier attempt that died after
    its sbatch can have reached the scheduler; the first attempt cancels without asking the cluster anything."""
    if job.submit_attempts <= 1:
        return _cancelled(job, "", CANCELLED_BEFORE)
    try:
        backend = get_backend(job.cluster, job.account)
        earlier = backend.find_submitted(submit_request(job))
        if earlier:
            backend.cancel(earlier)
    except BackendError as exc:
        if _retrying(job, exc):
            return Outcome.RETRY
        message = f"Cancelled. The cluster could not be asked whether an earlier attempt had submitted it: {exc}"
        return _cancelled(job, "", message)
    if earlier:
        return _cancelled(job, earlier, f"Cancelled on the cluster: an earlier attempt had submitted it ({earlier}).")
    return _cancelled(job, "", CANCELLED_BEFORE)


def _cancelled(job: Job, scheduler_id: str, message: str) -> Outcome:
    fields = {"scheduler_id": scheduler_id, "scheduler_state": "CANCELLED"} if scheduler_id else {}
    transition(job, JobState.CANCELLED, message=message, **fields)
    return Outcome.CANCELLED


def _retrying(job: Job, exc: BackendError) -> bool:
    if not (exc.transient and job.submit_attempts <= settings.GPULAB_SUBMIT_RETRIES):
        return False
    record(job, EventKind.NOTE, f"{exc} Trying again in {retry_delay(job.submit_attempts):.0f} s.")
    return True


def _failed(job: Job, exc: BackendError) -> Outcome:
    if _retrying(job, exc):
        return Outcome.RETRY
    transition(job, JobState.SUBMIT_FAILED, error=str(exc), message=str(exc))
    return Outcome.FAILED


def submit_request(job: Job) -> SubmitRequest:
    """What the backend needs: the script or objects, what the kind prepares first (Kubernetes: the namespace with the
    course's quota), the reservation of the course's lab session on now, which the job goes into, and an interactive
    session's token, made now if the job has none yet."""
    prepared = kinds.kind_of(job.cluster.kind).prepare_submit(job.course, job.owner, job.cluster)
    reservation = reservation_for(job.course_id, job.cluster_id)
    return SubmitRequest(
        job_id=job.pk,
        script=job.script,
        prepared=prepared,
        reservation=reservation,
        session_token=session_tokens.ensure(job),
    )


def resume_waiting() -> int:
    """At a worker's start: submit again what a dead worker held (its messages come back only after the broker's
    visibility timeout). Duplicates are harmless: submission is idempotent by the job's UUID."""
    waiting = waiting_for_submission()
    for job_id in waiting:
        enqueue.submit(job_id)
    if waiting:
        logger.info("resumed %d submissions no worker held", len(waiting))
    return len(waiting)


def waiting_for_submission() -> list:
    """Jobs not yet on a scheduler. After a worker died, some of their messages died with it; submitting each
    again is safe (see above): a job another worker holds answers BUSY until that worker is done or gone."""
    return list(
        Job.objects.filter(Q(state=JobState.QUEUED) | Q(state=JobState.SUBMITTING), in_array=False)
        .order_by("created_at")
        .values_list("pk", flat=True)[:1000]
    )


def give_up_on_stale(job: Job) -> bool:
    """A submission that kept failing in ways no task reported (crashes): fail it with a clear message."""
    return transition(
        job,
        JobState.SUBMIT_FAILED,
        error="The portal could not submit this job after several attempts. Try launching it again.",
        message=f"Gave up after {job.submit_attempts} attempts.",
    )


def stale_submissions() -> list[Job]:
    """Jobs whose submit message was lost or whose worker died: queued or submitting for too long."""
    stale_before = timezone.now() - timedelta(seconds=settings.GPULAB_SUBMIT_STALE_AFTER)
    return list(
        Job.objects.filter(
            Q(state=JobState.QUEUED) | Q(state=JobState.SUBMITTING), updated_at__lt=stale_before, in_array=False
        ).order_by("created_at")[:200]
    )


def sweep_stale() -> None:
    """The beat's last resort: a submission silent for SUBMIT_STALE_AFTER is sent again, and one whose attempts
    are used up (its workers kept dying) fails with a message saying what to do."""
    for job in stale_submissions():
        if job.state == JobState.SUBMITTING and job.submit_attempts > settings.GPULAB_SUBMIT_RETRIES + 1:
            give_up_on_stale(job)
        else:
            logger.info("resubmitting stale job %s (%s)", job.pk, job.state)
            enqueue.submit(job.pk)
