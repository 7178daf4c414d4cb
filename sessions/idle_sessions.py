"""Interactive sessions' own idle rule (course policy `session_idle_minutes`, separate from the batch GPU rule of
telemetry/idle_reaping.py): a running JupyterLab whose kernels did nothing for that long (Jupyter's /api/kernels,
`execution_state` and `last_activity`, asked through the session's server as the proxy reaches it) and whose GPUs
stayed idle as long (the stored ten-second buckets, below the course's idle threshold or IDLE_BELOW) is ended
through the normal cancel path: an event with the numbers, and the student's "cancelled" notification.

Invariant: a constant number of queries for any number of sessions; one /api/kernels request per session whose GPUs
already count as idle. A server that does not answer ends nothing (an outage is not idleness).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

import requests
from django.utils import timezone

from clusters.backends.base import BackendError
from clusters.backends.kind import KindRefusal
from core.choices import JobState, SessionKind
from courses import terms
from courses.models import Course
from jobs.cancellation import CancelRefused, request_cancel
from jobs.models import Job
from telemetry.idle_reaping import gpu_buckets, idle_stretch

from . import notebook

logger = logging.getLogger(__name__)
IDLE_BELOW = 5  # % GPU utilization, where the course sets no threshold of its own
KernelActivity = Callable[[Job], tuple[bool, datetime | None]]


def run(now: datetime | None = None, kernel_activity: KernelActivity = notebook.last_kernel_activity) -> list[str]:
    """End the idle sessions; the ids of those ended."""
    now = now or timezone.now()
    courses = {
        c.pk: c for c in Course.objects.filter(session_idle_minutes__isnull=False) if not terms.has_ended(c, now)
    }
    if not courses:
        return []
    sessions = list(
        Job.objects.filter(
            course_id__in=courses,
            state=JobState.RUNNING,
            template__session=SessionKind.JUPYTERLAB,
            cancel_requested_at__isnull=True,
            started_at__isnull=False,
        ).select_related("template", "cluster", "account", "course")
    )
    longest = max(c.session_idle_minutes or 0 for c in courses.values())
    buckets = gpu_buckets([s for s in sessions if s.gpus], now - timedelta(minutes=longest + 2))
    ended = []
    for job in sessions:
        why = _idle(job, courses[job.course_id], buckets.get(str(job.pk), {}), now, kernel_activity)
        if why:
            try:
                request_cancel(None, job, why=why)
            except CancelRefused:
                continue
            ended.append(str(job.pk))
    return ended


def _idle(job: Job, course: Course, buckets: dict, now: datetime, kernel_activity: KernelActivity) -> str:
    """Why the session ends now, or "" while it is in use (or cannot be asked)."""
    limit, started = course.session_idle_minutes, job.started_at
    if limit is None or started is None or now - started < timedelta(minutes=limit):  # the query asked for both
        return ""
    below = course.idle_util_below or IDLE_BELOW
    gpus = ""
    if job.gpus:
        idle = idle_stretch(buckets, below, job.started_at)
        if idle is None or idle.minutes < limit:
            return ""
        gpus = f" and its GPUs stayed below {below} % for {idle.minutes:.0f} minutes (highest {idle.max_util:.0f} %)"
    try:
        busy, last = kernel_activity(job)
    except (requests.RequestException, ValueError, KindRefusal, BackendError) as exc:
        logger.info("idle sessions: JupyterLab of job %s did not answer: %s", job.pk, exc)
        return ""
    quiet_since = max(filter(None, [last, job.started_at]))
    if busy or now - quiet_since < timedelta(minutes=limit):
        return ""
    quiet = (now - quiet_since).total_seconds() / 60
    return (
        f"Ended by the portal: this JupyterLab session's kernels did nothing for {quiet:.0f} minutes"
        f"{gpus}; the course ends sessions idle for {limit} minutes. Its notebooks stay in the run directory."
    )
