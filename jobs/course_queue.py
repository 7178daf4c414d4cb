"""A course's own queue on each of its clusters that keeps one (Kueue), for the course page and the class dashboard:
GPUs in quota, in use and borrowed, workloads pending and admitted (as the cluster says now, read at most every
CACHE_SECONDS per course and cluster), and how many of the course's jobs were preempted today (the portal's record).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.cache import cache
from django.utils import timezone

from clusters import kinds
from clusters.backends import BackendError
from clusters.backends.queue import QueueSummary

from . import queue_steps

CACHE_SECONDS = 15


@dataclass(frozen=True)
class CourseQueue:
    cluster: str
    summary: QueueSummary | None
    error: str
    preemptions_today: int


def course_queues(course, now: datetime) -> list[CourseQueue]:
    """One entry per enabled cluster of the course whose kind keeps a queue for it; [] elsewhere."""
    found = []
    today = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    for cluster in course.clusters.filter(enabled=True):
        key = f"gpulab:course-queue:{cluster.pk}:{course.pk}"
        entry = cache.get(key)
        if entry is None:
            try:
                entry = (kinds.kind_of(cluster.kind).queue_summary(cluster, course), "")
            except BackendError as exc:
                entry = (None, f"{cluster.display_name} did not say how the course's queue stands: {exc}")
            cache.set(key, entry, CACHE_SECONDS)
        summary, error = entry
        if summary is None and not error:
            continue
        found.append(CourseQueue(cluster.display_name, summary, error, queue_steps.preemptions_since(course, today)))
    return found
