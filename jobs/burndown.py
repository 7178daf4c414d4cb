"""Burn-down of GPU-hour budgets: hours left over the period, from the jobs that ran in it, drawn as SVG points.

A job burns its GPUs for every hour it runs, so hours left fall in straight lines between the moments a job starts
or ends; the curve needs only those moments. One query serves a whole course (`course_curves`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from courses.budgets import Period

from .models import Job

WIDTH, HEIGHT = 600, 160  # the SVG's viewBox; it scales to the page


@dataclass(frozen=True)
class Curve:
    points: list[tuple[datetime, float]]  # (moment, hours left)
    limit: float
    period: Period
    until: datetime

    def svg_points(self, width: int = WIDTH, height: int = HEIGHT) -> str:
        """The polyline's points in the viewBox: time across the whole period, hours left from the limit to 0."""
        end = self.period.end or self.until
        span = max((end - self.period.start).total_seconds(), 1.0)
        top = max(self.limit, 1e-9)

        def xy(moment, left):
            x = width * (moment - self.period.start).total_seconds() / span
            y = height * (1 - max(left, 0.0) / top)
            return f"{x:.1f},{y:.1f}"

        return " ".join(xy(m, left) for m, left in self.points)

    @property
    def now_x(self) -> float:
        end = self.period.end or self.until
        span = max((end - self.period.start).total_seconds(), 1.0)
        return round(WIDTH * (self.until - self.period.start).total_seconds() / span, 1)


def curve(intervals, limit: float, period: Period, until: datetime) -> Curve:
    """`intervals`: (started_at, finished_at or None, gpus) of the jobs that ran in the period."""
    rate_change: defaultdict[datetime, float] = defaultdict(float)
    for started, finished, gpus in intervals:
        begin = max(started, period.start)
        stop = min(finished or until, until)
        if stop > begin:
            rate_change[begin] += gpus
            rate_change[stop] -= gpus
    points, used, rate, last = [(period.start, limit)], 0.0, 0.0, period.start
    for moment in sorted(rate_change):
        used += rate * (moment - last).total_seconds() / 3600
        points.append((moment, limit - used))
        rate, last = rate + rate_change[moment], moment
    used += rate * (until - last).total_seconds() / 3600
    points.append((until, limit - used))
    return Curve(points, limit, period, until)


def empty_curve(limit: float, period: Period, now: datetime) -> Curve:
    return curve([], limit, period, min(period.end or now, now))


def course_curves(course, period: Period, limits: dict[int, float], default_limit: float, now=None) -> dict:
    """{student id: Curve} for every student with a job in the period, in one query."""
    now = now or timezone.now()
    until = min(period.end or now, now)
    rows = Job.objects.filter(course=course, gpus__gt=0, started_at__lt=until).filter(
        Q(finished_at__isnull=True) | Q(finished_at__gt=period.start)
    )
    by_owner = defaultdict(list)
    for owner_id, started, finished, gpus in rows.values_list("owner_id", "started_at", "finished_at", "gpus"):
        by_owner[owner_id].append((started, finished, gpus))
    return {
        owner: curve(intervals, limits.get(owner, default_limit), period, until)
        for owner, intervals in by_owner.items()
    }
