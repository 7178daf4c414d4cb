"""A start estimate where the scheduler makes none (Kueue): learnt from how long the same queue's earlier jobs waited.

The portal records every job's submission and start; the median wait of the last jobs of the same course on the
same cluster that started is the estimate, counted from the job's own submission. With fewer than MIN_WAITS such
jobs the page says there are too few to tell, rather than guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import median

from django.db.models import ExpressionWrapper, F, fields

from .models import Job

MIN_WAITS = 5
RECENT_WAITS = 30


@dataclass(frozen=True)
class Learnt:
    start: datetime | None
    note: str


def waits(course_id: int, cluster_id: int) -> list[timedelta]:
    """The waits of the queue's last RECENT_WAITS jobs that started (one query)."""
    waited = ExpressionWrapper(F("started_at") - F("submitted_at"), output_field=fields.DurationField())
    rows = (
        Job.objects.filter(course_id=course_id, cluster_id=cluster_id, submitted_at__isnull=False)
        .exclude(started_at__isnull=True)
        .annotate(waited=waited)
        .order_by("-started_at")
        .values_list("waited", flat=True)[:RECENT_WAITS]
    )
    return [max(wait, timedelta(0)) for wait in rows]


def estimate(job: Job, now: datetime, cache: dict) -> Learnt:
    """`cache` keeps each queue's waits for one cycle: every pending job of a course shares them."""
    key = (job.course_id, job.cluster_id)
    if key not in cache:
        cache[key] = waits(*key)
    known = cache[key]
    if len(known) < MIN_WAITS:
        return Learnt(
            None,
            f"Too few of this queue's jobs have started to estimate a start ({len(known)} of the {MIN_WAITS} the "
            "portal needs).",
        )
    typical = median(known)
    start = max((job.submitted_at or now) + typical, now)
    minutes = max(1, round(typical.total_seconds() / 60))
    return Learnt(start, f"Estimated from the median wait ({minutes} min) of this queue's last {len(known)} jobs.")
