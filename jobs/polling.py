"""Following jobs: one scheduler call per cluster per cycle (with SLURM accounting, a second asks the controller), moves
applied through the state machine.

A cluster that does not answer changes nothing: jobs keep their last known state until it is back. A poll answered
by the scheduler's records alone (SLURM accounting while slurmctld is down) applies what they say but does not count
as hearing from the scheduler (`heard` False): the pages keep saying states may be out of date (jobs/staleness.py).

Jobs that ended in a cycle have what accounting recorded of them read in one more call (clusters without accounting
answer nothing); while any job is pending, why it waits is read once more for all of them (jobs/waiting.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from clusters.backends import BackendError
from clusters.backends.base import SchedulerStatus, from_controller
from clusters.kinds import get_backend, kind_of
from clusters.models import Cluster
from core.choices import ON_SCHEDULER_STATES, TERMINAL_STATES, JobState

from . import enqueue, never_starts, queue_steps, waiting
from .models import Job, JobUsage
from .states import transition

logger = logging.getLogger(__name__)


@dataclass
class PollReport:
    cluster: str
    polled: int = 0
    moved: int = 0
    error: str = ""
    heard: bool = True  # the scheduler's controller itself answered (not only its accounting records)
    note: str = ""  # why not, for the operations page


def clusters_with_active_jobs() -> list[int]:
    return list(
        Job.objects.filter(state__in=ON_SCHEDULER_STATES)
        .exclude(scheduler_id="")
        .values_list("cluster_id", flat=True)
        .distinct()
        .order_by()
    )


def poll_cluster(cluster_id: int) -> PollReport:
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return PollReport(cluster=str(cluster_id), error="no such cluster")
    report = PollReport(cluster=cluster.name)
    jobs = list(
        Job.objects.filter(cluster=cluster, state__in=ON_SCHEDULER_STATES)
        .exclude(scheduler_id="")
        .select_related("template")
    )
    report.polled = len(jobs)
    if not jobs:
        return report
    try:
        backend = get_backend(cluster)
        statuses = backend.poll([job.scheduler_id for job in jobs])
    except BackendError as exc:
        report.error = str(exc)
        logger.warning("poll %s: %s (no job changes)", cluster.name, exc)
        return report
    report.heard, report.note = from_controller(statuses), getattr(statuses, "note", "")
    if not report.heard:
        logger.warning("poll %s: %s", cluster.name, report.note)
    now = timezone.now()
    lost_before = now - timedelta(seconds=settings.GPULAB_LOST_AFTER)
    seen, ended, milestones = [], [], {}
    for job in jobs:
        status = statuses.get(job.scheduler_id)
        if status is None:
            gone_since = job.last_seen_at or job.submitted_at or job.created_at
            lost = gone_since < lost_before
            if lost and transition(job, JobState.LOST, error=_lost_message(cluster), message=_lost_message(cluster)):
                report.moved += 1
            continue
        seen.append(job.pk)
        if status.milestones:
            milestones[job] = status.milestones
        if apply_status(job, status):
            report.moved += 1
            if job.is_terminal and job.started_at:
                ended.append(job)
    Job.objects.filter(pk__in=seen).update(last_seen_at=now)
    queue_steps.record(milestones)
    waiting.record(backend, cluster, jobs, now)
    record_usage(backend, ended + _usage_still_missing(cluster, now, [job.pk for job in ended]))
    return report


def _usage_still_missing(cluster, now, asked: list) -> list[Job]:
    """Jobs that ended in the last minutes whose accounting was not there yet (slurmdbd stores an end after
    slurmctld reports it): asked for again while the cluster is polled. One query; none without accounting."""
    if not kind_of(cluster.kind).keeps_usage(cluster):
        return []
    return list(
        Job.objects.filter(
            cluster=cluster,
            state__in=TERMINAL_STATES,
            started_at__isnull=False,
            finished_at__gte=now - timedelta(seconds=kind_of(cluster.kind).usage_arrives_within),
            accounted__isnull=True,
        )
        .exclude(pk__in=asked)
        .exclude(scheduler_id="")[:200]
    )


def record_usage(backend, jobs: list[Job]) -> None:
    """Store what accounting says these ended jobs used, in one call; a failure costs only the report's figures."""
    if not jobs:
        return
    try:
        found = backend.usage([job.scheduler_id for job in jobs])
    except BackendError as exc:
        logger.warning("usage of %d ended job(s) on %s: %s", len(jobs), backend.cluster.name, exc)
        return
    for job in jobs:
        usage = found.get(job.scheduler_id)
        if usage is not None:
            fields = {name: value for name, value in usage.__dict__.items() if name != "scheduler_id"}
            JobUsage.objects.update_or_create(job=job, defaults=fields)


def _lost_message(cluster) -> str:
    return (
        f"The scheduler of {cluster.display_name} no longer knows this job and has no record of how it ended. "
        "Its output may still be in the job directory."
    )


def apply_status(job: Job, status: SchedulerStatus) -> bool:
    """Move the job to what the scheduler says; True if it moved. Unchanged jobs cost no write."""
    fields: dict[str, object] = {"scheduler_state": status.raw_state[:32], "scheduler_reason": status.reason[:255]}
    if status.state == job.state:
        if (job.scheduler_state, job.scheduler_reason) != (fields["scheduler_state"], fields["scheduler_reason"]):
            Job.objects.filter(pk=job.pk, state=job.state).update(**fields)
        never_starts.follow(job, status)
        return False
    if job.never_starts_since is not None:  # it moved after all (started, or ended): the flag goes with the wait
        fields |= {"never_starts_since": None}
    never_ran = status.state == JobState.CANCELLED and not job.started_at and job.state != JobState.RUNNING
    # SLURM gives a job cancelled while pending a start time equal to its end: it ran no program, so has no exit code
    never_ran = never_ran and (status.started_at is None or status.started_at == status.finished_at)
    if status.state in TERMINAL_STATES:
        fields["exit_code"] = None if never_ran else status.exit_code
        fields["finished_at"] = status.finished_at
        if status.state != JobState.COMPLETED:
            fields["error"] = _ending_message(job, status)
    if status.started_at and status.state != JobState.PENDING and not never_ran:
        fields["started_at"] = job.started_at or status.started_at
    message = f"The scheduler reports {status.raw_state}" + (f" ({status.reason})" if status.reason else "") + "."
    moved = transition(job, status.state, message=message, **fields)
    if moved and status.state in TERMINAL_STATES:
        enqueue.keep_log(job.pk)  # before the cluster's scratch is cleaned
    return moved


def _ending_message(job: Job, status: SchedulerStatus) -> str:
    if status.ending:
        return status.ending
    if status.state == JobState.TIMED_OUT:
        limit = job.params.get("time_minutes")
        return f"The job reached its time limit{f' of {limit} minutes' if limit else ''} and was stopped."
    if status.state == JobState.CANCELLED:
        return (
            f"The job was cancelled: {job.never_starts_reason}" if job.never_starts_reason else "The job was cancelled."
        )
    if status.exit_code is not None:
        return f"The job ended with exit code {status.exit_code} ({status.raw_state}). The log shows why."
    return f"The job ended as {status.raw_state}. The log shows why."
