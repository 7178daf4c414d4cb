"""Celery tasks. Thin: they take ids and call the apps' services, which re-read the rows.

`jobs` never imports this module: it sends the tasks it needs by the names in jobs/enqueue.py, which these tasks
are registered under.
"""

import logging
import time

from celery import shared_task
from django.conf import settings
from django.core.cache import cache

from clusters import services as cluster_services
from clusters.backends import BackendError
from clusters.models import Cluster
from core import measurements
from core.enqueue import send_on_commit
from courses import lab_reservations, lab_sessions
from jobs import (
    budget_pass,
    cancellation,
    enqueue,
    kept_logs,
    lab_session_jobs,
    never_starts,
    polling,
    submission,
    term_end,
    time_limits,
)
from sessions import idle_sessions
from telemetry import idle_reaping

logger = logging.getLogger(__name__)


@shared_task(name=enqueue.SUBMIT_JOB, bind=True, max_retries=None, acks_late=True, reject_on_worker_lost=True)
def submit_job(self, job_id: str) -> str:
    outcome = submission.submit(job_id)
    if outcome is submission.Outcome.RETRY:
        raise self.retry(countdown=submission.next_retry_delay(job_id))
    if outcome is submission.Outcome.BUSY:
        raise self.retry(countdown=submission.busy_delay(self.request.retries))
    return outcome.value


@shared_task(name=enqueue.CANCEL_JOB, autoretry_for=(BackendError,), retry_backoff=5, max_retries=5)
def cancel_job(job_id: str, actor_id: int | None = None, why: str = "") -> None:
    cancellation.cancel_on_cluster(job_id, actor_id, why)


@shared_task(autoretry_for=(BackendError,), retry_backoff=5, max_retries=5)
def stop_overdue_job(job_id: str) -> None:
    time_limits.stop_overdue(job_id)


@shared_task(name=enqueue.KEEP_LOG, autoretry_for=(BackendError,), retry_backoff=5, max_retries=5)
def keep_job_log(job_id: str) -> None:
    kept_logs.keep_by_id(job_id)


@shared_task
def poll_cluster(cluster_id: int) -> dict:
    # One poll per cluster at a time: a slow cycle is not overlapped by the next one.
    lock_key = f"gpulab:poll:{cluster_id}"
    if not cache.add(lock_key, "1", timeout=max(60, int(settings.GPULAB_POLL_INTERVAL * 10))):
        return {"skipped": True}
    started = time.monotonic()
    try:
        report = polling.poll_cluster(cluster_id)
    finally:
        cache.delete(lock_key)
    seconds = time.monotonic() - started
    measurements.record_poll(report.cluster, seconds, report.error, heard=report.heard, note=report.note)
    return {
        "cluster": report.cluster,
        "polled": report.polled,
        "moved": report.moved,
        "error": report.error,
        "heard": report.heard,
    }


@shared_task
def poll_clusters() -> None:
    """The beat task: one poll per cluster with jobs on its scheduler, jobs the scheduler will never start cancelled
    after their grace period, servers past their time limit stopped, and a sweep for stuck submissions."""
    measurements.mark("beat")
    for cluster_id in polling.clusters_with_active_jobs():
        poll_cluster.delay(cluster_id)
    for job in never_starts.past_grace():
        cancellation.cancel_never_starting(job)
    for job in time_limits.overdue_servers():
        if time_limits.claim(job):
            stop_overdue_job.delay(str(job.pk))
    submission.sweep_stale()


@shared_task
def refresh_partition_limits() -> None:
    """The beat task: each enabled cluster's partition limits, asked in one scheduler call per cluster."""
    for cluster_id in Cluster.objects.filter(enabled=True).values_list("pk", flat=True):
        refresh_cluster_limits.delay(cluster_id)


@shared_task
def refresh_cluster_limits(cluster_id: int) -> None:
    cluster = Cluster.objects.filter(pk=cluster_id, enabled=True).first()
    if cluster is None:
        return
    try:
        cluster_services.refresh_partition_limits(cluster)
    except BackendError as exc:  # unreachable now: the limits learnt before stay, the next round asks again
        logger.warning("partition limits of %s: %s", cluster.name, exc)


@shared_task
def check_terms() -> dict:
    """The beat task: instructors told a week before their course's term ends, students with unfinished jobs warned
    a day before, and at the end the course's unfinished jobs cancelled. Idempotent; a late run catches up."""
    report = term_end.run()
    return {"told": report.told_instructors, "warned": report.warned_students, "cancelled": report.cancelled}


@shared_task
def evaluate_budgets() -> dict:
    """The beat task, once a minute: GPU-hour budgets warned at 80 % and 95 %, and running jobs stopped once a used-up
    budget's grace has passed (jobs/budget_pass.py); idle GPUs warned about, then their jobs cancelled
    (telemetry/idle_reaping.py)."""
    report = budget_pass.run()
    idle = idle_reaping.run()
    return {
        "warned": report.warned,
        "overruns": report.overruns,
        "stopped": len(report.stopped),
        "idle_warned": len(idle.warned),
        "idle_cancelled": len(idle.cancelled),
    }


@shared_task(name=lab_sessions.MAKE_RESERVATION, autoretry_for=(BackendError,), retry_backoff=5, max_retries=6)
def make_lab_reservation(session_id: int) -> str:
    """Hold a booked lab session's GPUs as its cluster does (or adopt what an earlier attempt made)."""
    return lab_reservations.make(session_id)


@shared_task(name=lab_sessions.REMOVE_RESERVATION, autoretry_for=(BackendError,), retry_backoff=5, max_retries=6)
def remove_lab_reservation(session_id: int) -> str:
    return lab_reservations.remove(session_id)


@shared_task(name=lab_sessions.KEEP_HOLD, autoretry_for=(BackendError,), retry_backoff=5, max_retries=6)
def keep_lab_session_held(session_id: int) -> str:
    """A session on now whose cluster holds GPUs only while it is on: held at its start, put back where lost."""
    return lab_reservations.keep(session_id)


@shared_task(name=lab_session_jobs.MOVE_PENDING, autoretry_for=(BackendError,), retry_backoff=5, max_retries=6)
def move_pending_into_lab_session(session_id: int) -> int:
    """The course's jobs already waiting as its lab session began go into the session's reservation."""
    return len(lab_session_jobs.move_pending(session_id))


@shared_task
def sweep_lab_sessions() -> dict:
    """The beat task: ended sessions closed and their GPUs given back, lost bookings asked for again, sessions held
    only while on checked, and the jobs waiting as a session began moved into it."""
    report = lab_reservations.sweep()
    starting = lab_session_jobs.due()
    for session_id in starting:
        send_on_commit(lab_session_jobs.MOVE_PENDING, session_id)
    return {
        "ended": len(report.ended),
        "removing": len(report.removing),
        "asked_again": len(report.asked_again),
        "kept": len(report.kept),
        "moving_pending": len(starting),
    }


@shared_task
def end_idle_sessions() -> dict:
    """The beat task, once a minute: JupyterLab sessions idle (kernels and GPUs) for their course's limit are ended
    (sessions/idle_sessions.py). Apart from evaluate_budgets: it asks each candidate's server over HTTP."""
    return {"ended": len(idle_sessions.run())}
