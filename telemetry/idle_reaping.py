"""Idle reaping as course policy, evaluated once a minute from the GPU utilization the portal stores for running
jobs (telemetry's ten-second buckets, SeriesChunk): every GPU of a job below the course's X % for N minutes warns
the student (on the job page, with "Keep it", and as a notification); still idle M minutes after the warning, the
job is cancelled through the normal path with an event carrying the numbers. "Keep it" restarts the idle clock.

Invariant: the pass reads with a fixed number of queries (courses, jobs with their warnings, stored series) for any
number of jobs; each warning or cancellation costs a few more. A GPU that works again clears the warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db.models import F, Q
from django.utils import timezone

from core.choices import EventKind, JobState
from core.figures import percent_under
from courses import terms
from courses.models import Course
from jobs.cancellation import request_cancel
from jobs.models import IdleWarning, Job
from jobs.signals import idle_warned
from jobs.states import record

from .models import SeriesChunk

UTIL_CHART = "gpu-util"


@dataclass
class Report:
    warned: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    cleared: int = 0


@dataclass(frozen=True)
class Idle:
    since: datetime  # the start of the idle stretch that reaches the newest bucket
    minutes: float
    max_util: float


def idle_stretch(buckets: dict[int, float], below: float, after: datetime | None) -> Idle | None:
    """`buckets`: {bucket start ms: highest GPU utilization of the job}; the idle stretch ending at the newest
    bucket (every bucket below `below`), counting only buckets from `after` on; None if the newest is busy."""
    start_ms = after.timestamp() * 1000 if after else float("-inf")
    times = sorted(t for t in buckets if t >= start_ms)
    if not times or buckets[times[-1]] >= below:
        return None
    first = times[-1]
    for t in reversed(times):
        if buckets[t] >= below:
            break
        first = t
    stretch = [buckets[t] for t in times if t >= first]
    since = datetime.fromtimestamp(first / 1000, tz=UTC)
    end = datetime.fromtimestamp(times[-1] / 1000 + 10, tz=UTC)  # a bucket covers ten seconds
    return Idle(since, (end - since).total_seconds() / 60, max(stretch))


def gpu_buckets(jobs: list[Job], oldest: datetime) -> dict[str, dict[int, float]]:
    """{job id: {bucket ms: highest utilization over the job's GPUs}} from the stored series, in one query."""
    found: dict[str, dict[int, float]] = {str(j.pk): {} for j in jobs}
    rows = SeriesChunk.objects.filter(job_id__in=[j.pk for j in jobs], end__gte=oldest).values_list("job_id", "series")
    for job_id, series in rows:
        mine = found[str(job_id)]
        for trace in (series.get(UTIL_CHART) or {}).values():
            for x, y in zip(trace.get("x", ()), trace.get("y", ()), strict=False):
                if y is not None:
                    mine[int(x)] = max(mine.get(int(x), 0.0), float(y))
    return found


def run(now: datetime | None = None) -> Report:
    now = now or timezone.now()
    report = Report()
    courses = {c.pk: c for c in Course.objects.filter(idle_util_below__isnull=False) if not terms.has_ended(c, now)}
    if not courses:
        return report
    jobs = list(
        Job.objects.filter(
            course_id__in=courses, state=JobState.RUNNING, gpus__gt=0, cancel_requested_at__isnull=True
        ).select_related("idle_warning", "template", "cluster")
    )
    longest = max(c.idle_warn_minutes + c.idle_cancel_minutes for c in courses.values())
    buckets = gpu_buckets(jobs, now - timedelta(minutes=longest + 2))
    for job in jobs:
        _apply(job, courses[job.course_id], buckets[str(job.pk)], now, report)
    return report


def _apply(job: Job, course: Course, buckets: dict[int, float], now: datetime, report: Report) -> None:
    warning = getattr(job, "idle_warning", None)
    kept = warning.kept_at if warning else None
    if course.idle_util_below is None:  # run() reads only the courses with a rule
        return
    idle = idle_stretch(buckets, course.idle_util_below, max(filter(None, [kept, job.started_at]), default=None))
    if warning is not None and warning.active and idle is None:  # it works again: the warning no longer holds
        IdleWarning.objects.filter(pk=job.pk).update(warned_at=None)
        report.cleared += 1
        return
    if idle is None or idle.minutes < course.idle_warn_minutes:
        return
    if warning is None or not warning.active:
        if _warn(job, course, idle, now):
            report.warned.append(str(job.pk))
    elif now >= warning.warned_at + timedelta(minutes=course.idle_cancel_minutes):
        request_cancel(None, job, why=_why(course, idle, warning.warned_at))
        report.cancelled.append(str(job.pk))


def _warn(job: Job, course: Course, idle: Idle, now: datetime) -> bool:
    """Warn once: the warning is claimed with a conditional write, so a pass running beside this one warns nothing
    more; False when that other pass claimed it."""
    if not _claim_warning(job, now, idle):
        return False
    cancel_at = now + timedelta(minutes=course.idle_cancel_minutes)
    text = (
        f"The GPUs of your job have been below {course.idle_util_below} % for {idle.minutes:.0f} minutes "
        f"(highest {percent_under(idle.max_util)} %). It will be cancelled at {terms.when(cancel_at)} unless you press "
        "“Keep it” on its page or the GPUs get busy again."
    )
    record(job, EventKind.NOTE, f"Idle warning sent to the owner. {text}")
    idle_warned.send(sender=IdleWarning, job=job, text=text, key=f"{job.pk}:{now:%Y%m%d%H%M}")
    return True


def _claim_warning(job: Job, now: datetime, idle: Idle) -> bool:
    figures = {"warned_at": now, "idle_minutes": round(idle.minutes, 1), "max_util": idle.max_util}
    warning = getattr(job, "idle_warning", None)
    if warning is None:
        _, made = IdleWarning.objects.get_or_create(job=job, defaults=figures)
        return made
    not_active = Q(warned_at__isnull=True) | Q(kept_at__gte=F("warned_at"))
    return bool(IdleWarning.objects.filter(not_active, pk=job.pk, warned_at=warning.warned_at).update(**figures))


def _why(course: Course, idle: Idle, warned_at: datetime) -> str:
    return (
        f"Cancelled by the portal: its GPUs stayed below {course.idle_util_below} % utilization for "
        f"{idle.minutes:.0f} minutes (highest {percent_under(idle.max_util)} %), and nobody kept it within "
        f"{course.idle_cancel_minutes} minute(s) of the warning at {terms.when(warned_at)}."
    )
