"""The sweep's Celery tasks, registered by the names sweeps/cancellation.py sends. Thin: they call the services."""

from __future__ import annotations

from celery import shared_task

from clusters.backends import BackendError
from jobs.submission import Outcome, busy_delay

from . import cancellation, submission

RESUME_STALE = "sweeps.tasks.resume_stale_sweeps"  # on the beat's schedule (portal/settings.py)


@shared_task(name=cancellation.SUBMIT_SWEEP, bind=True, max_retries=None, acks_late=True, reject_on_worker_lost=True)
def submit_sweep(self, sweep_id: str) -> str:
    outcome = submission.submit(sweep_id)
    if outcome is Outcome.RETRY:
        raise self.retry(countdown=submission.next_retry_delay(sweep_id))
    if outcome is Outcome.BUSY:
        raise self.retry(countdown=busy_delay(self.request.retries))
    return outcome.value


@shared_task(name=cancellation.CANCEL_SWEEP, autoretry_for=(BackendError,), retry_backoff=5, max_retries=5)
def cancel_sweep(sweep_id: str) -> None:
    cancellation.cancel_on_cluster(sweep_id)


@shared_task(name=RESUME_STALE)
def resume_stale_sweeps() -> int:
    return submission.resume_stale()
