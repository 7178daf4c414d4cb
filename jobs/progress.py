"""Where a job stands: time since it started, time left before the scheduler stops it, training step and ETA.

Arithmetic over the job row and the trainer's points, which telemetry parsed from the log (this module never reads
a log). What cannot be known is None, and the page leaves it out rather than guessing: no time left without a
limit, no ETA without `step_ms`, no step of N without the steps the run plans. Those are the trainer's own
`total_steps` (fewer than `max_steps` when the epoch ends first); only a running job whose trainer does not print them
falls back to the template's `max_steps`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from clusters import kinds

from .models import Job

RECENT_POINTS = 5  # the ETA follows the last few log lines, so a slow start or a compile step weighs nothing later


@dataclass(frozen=True)
class Progress:
    elapsed: timedelta | None = None
    ends_at: datetime | None = None  # when the scheduler's time limit stops the job
    time_left: timedelta | None = None
    step: int | None = None
    max_steps: int | None = None
    eta: timedelta | None = None  # until max_steps at the recent step time

    @property
    def percent(self) -> int | None:
        if self.step is None or not self.max_steps:
            return None
        return min(100, round(100 * self.step / self.max_steps))

    @property
    def finishes_after_limit(self) -> bool:
        """The steps left need longer than the time left: the limit will stop training first."""
        return self.eta is not None and self.time_left is not None and self.eta > self.time_left


def time_limit(job: Job) -> timedelta | None:
    """The limit the job is held to, by its cluster's kind: the job's own time_minutes, else the template's where
    the kind enforces that (Kubernetes Jobs' activeDeadlineSeconds, servers stopped by jobs/time_limits.py)."""
    minutes = kinds.kind_of(job.cluster.kind).time_limit_minutes(job)
    return timedelta(minutes=minutes) if minutes else None


def job_progress(job: Job, points: Sequence[dict], now: datetime) -> Progress:
    """`points`: the trainer's points, oldest first, each with "step" and, from recent trainers, "step_ms" and
    "total_steps"."""
    if job.started_at is None:
        return Progress()
    finished = job.finished_at if job.is_terminal else None
    elapsed = max(timedelta(0), (finished or now) - job.started_at)
    limit = time_limit(job)
    ends_at = job.started_at + limit if limit else None
    time_left = max(timedelta(0), ends_at - now) if ends_at and not finished else None
    step = int(points[-1]["step"]) if points else None
    max_steps = planned_steps(points) or (None if finished else _max_steps_param(job))
    eta = None
    if step is not None and max_steps and not finished:
        recent = [float(p["step_ms"]) for p in points[-RECENT_POINTS:] if p.get("step_ms")]
        if recent:
            eta = timedelta(milliseconds=max(0, max_steps - step) * statistics.median(recent))
    return Progress(elapsed, ends_at, time_left, step, max_steps, eta)


def planned_steps(points: Sequence[dict]) -> int | None:
    """The steps the run plans in all, as its trainer last said (points from trainers that print them)."""
    return next((int(p["total_steps"]) for p in reversed(points) if p.get("total_steps")), None)


def _max_steps_param(job: Job) -> int | None:
    value = job.params.get("max_steps")
    return int(value) if value else None
