"""Servers stop at their template's time limit.

Batch work carries its limit to the scheduler (SLURM's --time, a Kubernetes Job's activeDeadlineSeconds), which
ends it as timed out. A Kubernetes Deployment has no such field and would hold its GPUs until someone cancels
it, so on the kinds that say so (Kind.portal_stops_at_time_limit) the beat task finds running jobs past the
limit and the portal stops them, as timed out.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from clusters import kinds
from clusters.kinds import get_backend
from core.choices import EventKind, JobState

from .models import Job
from .states import record, transition


def overdue_servers() -> list[Job]:
    now = timezone.now()
    running = Job.objects.filter(
        cluster__kind__in=kinds.names_where("portal_stops_at_time_limit"),
        state=JobState.RUNNING,
        started_at__isnull=False,
        cancel_requested_at__isnull=True,
    ).select_related("template")
    return [
        job
        for job in running
        if job.started_at is not None and job.started_at + timedelta(minutes=job.template.max_minutes) < now
    ]


def claim(job: Job) -> bool:
    """Mark the job as being stopped, once: a second beat cycle or worker finds it claimed."""
    claimed = Job.objects.filter(pk=job.pk, cancel_requested_at__isnull=True).update(cancel_requested_at=timezone.now())
    if claimed:
        record(job, EventKind.CANCEL, f"Reached the template's time limit of {job.template.max_minutes} minutes.")
    return bool(claimed)


def stop_overdue(job_id) -> None:
    job = Job.objects.select_related("cluster", "account", "template").filter(pk=job_id).first()
    if job is None or job.state != JobState.RUNNING:
        return
    get_backend(job.cluster, job.account).cancel(job.scheduler_id)
    limit = job.template.max_minutes
    transition(
        job,
        JobState.TIMED_OUT,
        error=f"The server reached its time limit of {limit} minutes and was stopped. Launch it again to continue.",
        message=f"Stopped at the time limit ({limit} minutes); all of its objects are deleted.",
    )
