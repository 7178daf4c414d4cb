"""Jobs the scheduler will never start: flagged, released from the quota, cancelled after a grace period.

A backend says so on the SchedulerStatus of a pending job (`never_starts`, its words for the student). While a job
carries `never_starts_since` it does not count against its owner's quota (jobs/launch.py check_quota); if the reason
clears (an admin raised the limit) the flag goes and the job counts again. After GPULAB_NEVER_STARTS_GRACE seconds
the portal cancels it, with an event saying why (`cancellation.cancel_never_starting`). Every write is a conditional
update: a repeated poll changes nothing.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from clusters.backends.base import SchedulerStatus
from core.choices import EventKind, JobState

from .models import Job
from .states import record


def grace() -> timedelta:
    return timedelta(seconds=settings.GPULAB_NEVER_STARTS_GRACE)


def follow(job: Job, status: SchedulerStatus) -> None:
    """Flag or unflag a job whose state did not change, after what the scheduler now says of it."""
    if status.never_starts and job.never_starts_since is None and status.state == JobState.PENDING:
        _flag(job, status.never_starts)
    elif not status.never_starts and job.never_starts_since is not None:
        cleared_fields(job)


def _flag(job: Job, reason: str) -> None:
    now = timezone.now()
    with transaction.atomic():
        flagged = Job.objects.filter(pk=job.pk, state=JobState.PENDING, never_starts_since__isnull=True).update(
            never_starts_since=now, never_starts_reason=reason[:255]
        )
        if not flagged:
            return
        job.never_starts_since, job.never_starts_reason = now, reason[:255]
        minutes = int(grace().total_seconds() // 60)
        record(
            job,
            EventKind.NOTE,
            f"{reason} It no longer counts against the quota; the portal cancels it in {minutes} minutes unless the "
            "cluster changes.",
        )


def cleared_fields(job: Job) -> None:
    """The reason cleared (the job moved, or now waits for something that passes): it counts again."""
    with transaction.atomic():
        cleared = Job.objects.filter(pk=job.pk, never_starts_since__isnull=False).update(
            never_starts_since=None, never_starts_reason=""
        )
        if cleared:
            job.never_starts_since, job.never_starts_reason = None, ""
            record(
                job, EventKind.NOTE, "The scheduler may start this job after all; it counts against the quota again."
            )


def past_grace() -> list[Job]:
    cutoff = timezone.now() - grace()
    return list(
        Job.objects.filter(
            state=JobState.PENDING, never_starts_since__lt=cutoff, cancel_requested_at__isnull=True
        ).order_by("never_starts_since")[:200]
    )
