"""Submitting a sweep's array to its cluster, exactly once, as jobs/submission.py submits one job.

queued → submitting is a conditional update; the attempt is counted (and committed) before any SSH; the sbatch runs
under the sweep's row lock (SKIP LOCKED), so a duplicate message finds nothing to do. The sweep's UUID travels as the
array's --comment, which every task inherits: a retry after a worker died finds the earlier array and records it
instead of submitting again. A cancel request recorded on the sweep before the sbatch keeps it off the cluster; one
recorded meanwhile is honoured with one scancel of the array. A run cancelled on its own before the sbatch is left out
of the array's indexes.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from clusters.backends import BackendError
from clusters.backends.base import SubmitRequest
from clusters.kinds import get_backend, kind_of
from core import enqueue, failpoints
from core.choices import JobState
from courses.lab_sessions import reservation_for
from jobs import access
from jobs.states import transition
from jobs.submission import Outcome, retry_delay

from .cancellation import SUBMIT_SWEEP
from .models import Sweep, SweepState, SweepSubmission
from .release import release

logger = logging.getLogger(__name__)


def submit(sweep_id) -> Outcome:
    if Sweep.objects.filter(pk=sweep_id, submission=SweepSubmission.RUNS).exists():
        return release(sweep_id)  # no array: the next runs are let out, each submitted as a job
    moved = Sweep.objects.filter(pk=sweep_id, state=SweepState.QUEUED).update(
        state=SweepState.SUBMITTING, updated_at=timezone.now()
    )
    if not moved and not Sweep.objects.filter(pk=sweep_id, state=SweepState.SUBMITTING).exists():
        return Outcome.NOTHING
    if not _claim_attempt(sweep_id):
        return _busy_or_done(sweep_id)
    with transaction.atomic():
        sweep = (
            Sweep.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("cluster", "account", "template", "course", "owner")
            .filter(pk=sweep_id, state=SweepState.SUBMITTING)
            .first()
        )
        if sweep is None:
            return _busy_or_done(sweep_id)
        return _submit_locked(sweep)


def next_retry_delay(sweep_id) -> float:
    attempts = Sweep.objects.filter(pk=sweep_id).values_list("submit_attempts", flat=True).first() or 1
    return retry_delay(attempts)


def _claim_attempt(sweep_id) -> bool:
    with transaction.atomic():
        free = Sweep.objects.select_for_update(skip_locked=True).filter(pk=sweep_id, state=SweepState.SUBMITTING)
        if not free.values_list("pk", flat=True).first():
            return False
        Sweep.objects.filter(pk=sweep_id).update(submit_attempts=F("submit_attempts") + 1, updated_at=timezone.now())
    return True


def _busy_or_done(sweep_id) -> Outcome:
    return Outcome.BUSY if Sweep.objects.filter(pk=sweep_id, state=SweepState.SUBMITTING).exists() else Outcome.NOTHING


def _live_runs(sweep: Sweep) -> list:
    """(index, job) of the runs still waiting for the array: not cancelled on their own meanwhile."""
    runs = sweep.runs.select_related("job").filter(job__state=JobState.QUEUED)
    return [(run.index, run.job) for run in runs]


def _submit_locked(sweep: Sweep) -> Outcome:
    live = _live_runs(sweep)
    if sweep.cancel_requested_at is not None or not live:
        return _cancel_unsubmitted(sweep, live)
    try:
        access.check_launch(sweep.owner, sweep.course, sweep.template, sweep.cluster)
    except access.LaunchRefused as exc:
        return _fail(sweep, live, str(exc))
    request = SubmitRequest(
        job_id=sweep.pk,
        script=sweep.script,
        reservation=reservation_for(sweep.course_id, sweep.cluster_id),
        array=kind_of(sweep.cluster.kind).array_spec([index for index, _ in live], sweep.max_concurrent),
        task_values=sweep.values_file,
    )
    try:
        backend = get_backend(sweep.cluster, sweep.account)
        earlier = backend.find_submitted(request) if sweep.submit_attempts > 1 else None
        array_id = earlier or backend.submit(request)
        failpoints.pause("sweep.after_sbatch")  # tests: a worker killed between the sbatch and recording its id
    except BackendError as exc:
        if exc.transient and sweep.submit_attempts <= settings.GPULAB_SUBMIT_RETRIES:
            return Outcome.RETRY
        return _fail(sweep, live, str(exc))
    how = "Found the earlier submission" if earlier else "Submitted"
    Sweep.objects.filter(pk=sweep.pk).update(state=SweepState.SUBMITTED, scheduler_id=array_id)
    for index, job in live:
        task = f"{array_id}_{index}"
        transition(job, JobState.SUBMITTING, message=f"Submitting with sweep {sweep.short_id}.")
        message = f"{how}: task {index} of array {array_id} (sweep {sweep.short_id}, {request.array})."
        if not transition(job, JobState.PENDING, scheduler_id=task, scheduler_state="PENDING", message=message):
            _cancel_task(backend, task)  # cancelled on its own while the sbatch ran
    if Sweep.objects.filter(pk=sweep.pk).exclude(cancel_requested_at=None).exists():
        _cancel_task(backend, array_id)
    return Outcome.SUBMITTED


def _cancel_task(backend, scheduler_id: str) -> None:
    try:
        backend.cancel(scheduler_id)
    except BackendError as exc:  # the poll still follows it; its page offers Cancel again
        logger.warning("scancel %s right after the sweep's submission failed: %s", scheduler_id, exc)


def _cancel_unsubmitted(sweep: Sweep, live: list) -> Outcome:
    """Before its sbatch: only an earlier attempt that died after its sbatch can have reached the cluster."""
    if sweep.submit_attempts > 1:
        try:
            backend = get_backend(sweep.cluster, sweep.account)
            earlier = backend.find_submitted(SubmitRequest(job_id=sweep.pk, script=sweep.script))
            if earlier:
                backend.cancel(earlier)
        except BackendError as exc:
            logger.warning("sweep %s: could not look for an earlier array: %s", sweep.pk, exc)
    Sweep.objects.filter(pk=sweep.pk).update(state=SweepState.CANCELLED)
    for _, job in live:
        transition(job, JobState.CANCELLED, message="Cancelled with its sweep before it reached the cluster.")
    return Outcome.CANCELLED


def _fail(sweep: Sweep, live: list, why: str) -> Outcome:
    Sweep.objects.filter(pk=sweep.pk).update(state=SweepState.SUBMIT_FAILED, error=why)
    for _, job in live:
        transition(job, JobState.SUBMIT_FAILED, error=why, message=why)
    return Outcome.FAILED


def resume_stale() -> int:
    """A sweep whose submit message died with its worker: queued or submitting for longer than SUBMIT_STALE_AFTER is
    sent again (harmless: the sweep's UUID finds an earlier array), and one whose attempts are used up fails, saying
    what to do. A sweep going run by run counts no attempts of its own (its runs do): it is sent again, which lets
    out any run whose turn came while no message was on its way. Run at a worker's start and by the beat."""
    stale_before = timezone.now() - timedelta(seconds=settings.GPULAB_SUBMIT_STALE_AFTER)
    stale = Sweep.objects.filter(
        state__in=[SweepState.QUEUED, SweepState.SUBMITTING], updated_at__lt=stale_before
    ).order_by("created_at")[:200]
    for sweep in stale:
        if sweep.state == SweepState.SUBMITTING and sweep.submit_attempts > settings.GPULAB_SUBMIT_RETRIES + 1:
            with transaction.atomic():
                locked = Sweep.objects.select_for_update(skip_locked=True).filter(pk=sweep.pk).first()
                if locked is not None:
                    why = "The portal could not submit this sweep after several attempts. Launch it again."
                    _fail(locked, _live_runs(locked), why)
        else:
            enqueue.send(SUBMIT_SWEEP, (str(sweep.pk),))
    return len(stale)
