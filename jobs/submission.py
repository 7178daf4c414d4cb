"""Submitting a queued job to its cluster, exactly once.

queued → submitting is a conditional update, so a duplicate message stops there. The SSH work then runs
under a row lock (SELECT … FOR UPDATE SKIP LOCKED): a second worker skips, and a worker that dies
releases the lock with its connection. A retry looks for the portal's job UUID on the scheduler first
and records what it finds instead of submitting again.
"""

from __future__ import annotations

import enum
import logging

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from clusters.backends import BackendError, get_backend
from clusters.backends.base import SubmitRequest
from courses import access, namespaces
from ops import store as ops_store
from portal import failpoints

from .models import Job
from .states import EventKind, JobState, record, transition

logger = logging.getLogger(__name__)


class Outcome(enum.Enum):
    SUBMITTED = "submitted"
    RETRY = "retry"  # a transient failure; the caller schedules another attempt
    FAILED = "failed"
    NOTHING = "nothing"  # gone, already done elsewhere, or held by another worker


def retry_delay(attempts: int) -> float:
    return settings.GPULAB_SUBMIT_RETRY_DELAY * 2 ** max(attempts - 1, 0)


def submit(job_id) -> Outcome:
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        return Outcome.NOTHING
    if job.state == JobState.QUEUED:
        transition(job, JobState.SUBMITTING, message=f"Submitting to {job.cluster.display_name}.")
        job.refresh_from_db(fields=["state"])
    if job.state != JobState.SUBMITTING:
        return Outcome.NOTHING
    # Counted and committed before any SSH, so a retry after a crash knows to look for an earlier sbatch.
    Job.objects.filter(pk=job.pk, state=JobState.SUBMITTING).update(
        submit_attempts=F("submit_attempts") + 1, updated_at=timezone.now()
    )
    with transaction.atomic():
        job = (
            Job.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("cluster", "account", "template", "course", "owner")
            .filter(pk=job.pk, state=JobState.SUBMITTING)
            .first()
        )
        if job is None:
            return Outcome.NOTHING
        return _submit_locked(job)


def _submit_locked(job: Job) -> Outcome:
    try:
        access.check_launch(job.owner, job.course, job.template, job.cluster)
    except access.LaunchRefused as exc:
        transition(job, JobState.SUBMIT_FAILED, error=str(exc), message=str(exc))
        return Outcome.FAILED
    try:
        backend = get_backend(job.cluster, job.account)
        request = submit_request(job)
        earlier = backend.find_submitted(request) if job.submit_attempts > 1 else None
        scheduler_id = earlier or backend.submit(request)
        failpoints.pause("submit.after_sbatch")
    except BackendError as exc:
        if exc.transient and job.submit_attempts <= settings.GPULAB_SUBMIT_RETRIES:
            record(job, EventKind.NOTE, f"{exc} Trying again in {retry_delay(job.submit_attempts):.0f} s.")
            return Outcome.RETRY
        transition(job, JobState.SUBMIT_FAILED, error=str(exc), message=str(exc))
        return Outcome.FAILED
    how = "Found the earlier submission" if earlier else "Submitted"
    transition(
        job,
        JobState.PENDING,
        scheduler_id=scheduler_id,
        scheduler_state="PENDING",
        message=f"{how}: scheduler job {scheduler_id}.",
    )
    latency = (timezone.now() - job.created_at).total_seconds()
    transaction.on_commit(lambda: ops_store.observe("submit_latency_seconds", latency, job.cluster.name))
    if job.cancel_requested_at is not None:
        transaction.on_commit(lambda: _cancel_after_submit(job.pk))
    return Outcome.SUBMITTED


def _cancel_after_submit(job_id) -> None:
    from workers.tasks import cancel_job

    cancel_job.delay(str(job_id))


def submit_request(job: Job) -> SubmitRequest:
    """What the backend needs: the script or objects, and on Kubernetes the namespace with the course's quota."""
    plan = namespaces.plan_for(job.course, job.owner) if job.cluster.is_kubernetes else None
    return SubmitRequest(job_id=job.pk, script=job.script, namespace=plan)


def give_up_on_stale(job: Job) -> bool:
    """A submission that kept failing in ways no task reported (crashes): fail it with a clear message."""
    return transition(
        job,
        JobState.SUBMIT_FAILED,
        error="The portal could not submit this job after several attempts. Try launching it again.",
        message=f"Gave up after {job.submit_attempts} attempts.",
    )
