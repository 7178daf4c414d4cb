"""What each job used: stored when it ends, and the course report instructors export.

GPU-hours come from the job's own record (GPUs held times time running), so they exist even for a job the
collector never saw; utilization, memory and tok/s come from the collector's running totals.
"""

from __future__ import annotations

from datetime import datetime

from core.choices import TERMINAL_STATES
from jobs.models import Job

from .frames import Usage
from .models import JobSummary


def gpu_hours(gpus: int, started: datetime | None, finished: datetime | None) -> float:
    if not gpus or started is None or finished is None or finished <= started:
        return 0.0
    return round(gpus * (finished - started).total_seconds() / 3600, 4)


def summary_fields(job: Job, usage: Usage | None) -> dict:
    fields: dict[str, float | None] = {"gpu_hours": gpu_hours(job.gpus, job.started_at, job.finished_at)}
    if usage is not None:
        fields.update(
            mean_gpu_util=round(usage.util_sum / usage.samples, 1) if usage.samples else None,
            max_gpu_util=usage.util_max,
            peak_gpu_memory_mib=usage.memory_peak,
            gpu_memory_total_mib=usage.memory_total,
            mean_tokens_per_s=round(usage.tokens_sum / usage.tokens_count, 1) if usage.tokens_count else None,
            idle_minutes=round(usage.idle_seconds / 60, 1),
            samples=usage.samples,
        )
    return fields


def store_ended(usage: dict[str, Usage]) -> list[str]:
    """Write the summary of every job in `usage` that has ended, and forget its totals. Returns their ids."""
    ended = list(Job.objects.filter(pk__in=list(usage), state__in=TERMINAL_STATES))
    for job in ended:
        JobSummary.objects.update_or_create(job=job, defaults=summary_fields(job, usage.pop(str(job.pk), None)))
    return [str(job.pk) for job in ended]


REPORT_COLUMNS = [
    "student",
    "job",
    "template",
    "cluster",
    "state",
    "gpus",
    "started",
    "finished",
    "gpu_hours",
    "mean_gpu_util_pct",
    "max_gpu_util_pct",
    "peak_gpu_memory_mib",
    "mean_tokens_per_s",
    "gpu_idle_minutes",
]


def course_report(course) -> list[list]:
    """One row per job of the course that ran, oldest first; jobs without a summary get GPU-hours from their times."""
    jobs = (
        Job.objects.filter(course=course, started_at__isnull=False)
        .select_related("owner", "template", "cluster", "summary")
        .order_by("started_at")
    )
    rows = []
    for job in jobs:
        summary = getattr(job, "summary", None)
        rows.append(
            [
                job.owner.username,
                str(job.pk),
                job.template.name,
                job.cluster.name,
                job.state,
                job.gpus,
                job.started_at.isoformat() if job.started_at else "",  # the query asked for jobs that started
                job.finished_at.isoformat() if job.finished_at else "",
                summary.gpu_hours if summary else gpu_hours(job.gpus, job.started_at, job.finished_at),
                _blank(summary and summary.mean_gpu_util),
                _blank(summary and summary.max_gpu_util),
                _blank(summary and summary.peak_gpu_memory_mib),
                _blank(summary and summary.mean_tokens_per_s),
                _blank(summary and summary.idle_minutes),
            ]
        )
    return rows


def _blank(value):
    return "" if value is None else value
