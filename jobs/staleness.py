"""Saying aloud when a cluster has stopped answering, so a page never shows an old state as if it were current.

The fact is the one the operations page reads: when each cluster's scheduler last answered (core/measurements.py,
written by every poll and submission). A job the scheduler holds (pending, running) is shown with a notice
once its cluster has been silent for more than two poll cycles.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

import redis
from django.conf import settings

from core import measurements
from core.choices import ON_SCHEDULER_STATES

from .models import Job

logger = logging.getLogger(__name__)

MIN_SILENCE_SECONDS = 10.0  # with very short poll intervals, one slow SSH round trip is not yet an outage


@dataclass(frozen=True)
class StaleNotice:
    cluster: str  # the name people see
    seconds: int  # since it last answered

    @property
    def silence(self) -> str:
        # Whole minutes after the first: the state panel is sent again only when its words change, so a notice
        # that counted seconds made every poll of a silent cluster send every open page its panel again.
        if self.seconds < 60:
            return f"{self.seconds} s"
        if self.seconds < 7200:
            return f"{self.seconds // 60} min"
        return f"{self.seconds // 3600} h"

    @property
    def text(self) -> str:
        return f"No answer from {self.cluster} for {self.silence}; states may be out of date."


def silence_allowed() -> float:
    return max(2 * settings.GPULAB_POLL_INTERVAL, MIN_SILENCE_SECONDS)


def notices_for(jobs: Job | Iterable[Job], now: float | None = None) -> list[StaleNotice]:
    """One notice per silent cluster among the jobs' clusters; no database query (jobs carry their cluster)."""
    jobs = [jobs] if isinstance(jobs, Job) else list(jobs)
    clusters = {job.cluster.name: job.cluster for job in jobs if job.state in ON_SCHEDULER_STATES}
    if not clusters:
        return []
    try:
        heard = measurements.last_heard(sorted(clusters))
    except (redis.RedisError, OSError) as exc:  # the page still shows, without the notice
        logger.warning("stale notice: Redis unreachable: %s", exc)
        return []
    now = time.time() if now is None else now
    silent = [(name, now - at) for name, at in heard.items() if at is not None and now - at > silence_allowed()]
    return [StaleNotice(clusters[name].display_name, int(age)) for name, age in silent]
