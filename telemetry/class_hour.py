"""The class dashboard's last hour: each student's GPU utilization minute by minute, the jobs that ended included.

The live heatmap (static/js/class_dashboard.js) shows the last five minutes from the socket's frames and lets a job
go once it ended; this hour is read from the stored series (telemetry/recorder.py: ten-second means per GPU,
flushed every TELEMETRY_FLUSH_SECONDS), so it stops where the last flush did. Two queries for any class: the jobs
that ran in the hour, and their chunks' `gpu-util` traces (extracted by PostgreSQL, not the whole chunk).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db.models import Q
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from core.choices import ACTIVE_STATES
from jobs.models import Job

from .idle_reaping import UTIL_CHART
from .models import SeriesChunk

MINUTES = 60
MINUTE_MS = 60_000


@dataclass
class _Row:
    username: str
    name: str
    jobs: set[str] = field(default_factory=set)
    active: bool = False
    totals: list[float] = field(default_factory=lambda: [0.0] * MINUTES)
    counts: list[int] = field(default_factory=lambda: [0] * MINUTES)

    def add(self, minute: int, util: float) -> None:
        self.totals[minute] += util
        self.counts[minute] += 1

    def as_dict(self) -> dict:
        util = [round(t / n) if n else None for t, n in zip(self.totals, self.counts, strict=True)]
        samples = sum(self.counts)
        mean = round(sum(self.totals) / samples, 1) if samples else None
        return {"student": self.username, "name": self.name, "jobs": len(self.jobs), "running": self.active,
                "util": util, "mean": mean}  # fmt: skip


def class_hour(course, now: datetime | None = None) -> dict:
    """{"start": ms, "minutes", "rows": [{student, name, jobs, running, util: [% or None per minute], mean}],
    "simulated"}: one row per student whose job held GPUs in the hour, the least busy first."""
    now = now or timezone.now()
    end_ms = (int(now.timestamp() * 1000) // MINUTE_MS + 1) * MINUTE_MS  # the minute under way is the last column
    start_ms = end_ms - MINUTES * MINUTE_MS
    since = datetime.fromtimestamp(start_ms / 1000, tz=UTC)
    found = Job.objects.filter(course=course).filter(Q(state__in=ACTIVE_STATES) | Q(finished_at__gte=since))
    fields = ("pk", "owner__username", "owner__first_name", "owner__last_name", "state", "summary__simulated_gpus")
    listed = list(found.values_list(*fields))
    jobs = {str(pk): (username, first, last, state) for pk, username, first, last, state, _ in listed}
    simulated = any(replayed for *_, replayed in listed)  # ended jobs' summaries; the live notice says it for the rest
    rows: dict[str, _Row] = {}
    chunks = SeriesChunk.objects.filter(job_id__in=jobs, end__gte=since).annotate(
        util=KeyTransform(UTIL_CHART, "series")
    )
    for job_id, traces in chunks.values_list("job_id", "util"):
        username, first, last, state = jobs[str(job_id)]
        row = rows.get(username) or rows.setdefault(username, _Row(username, f"{first} {last}".strip() or username))
        row.jobs.add(str(job_id))
        row.active |= state in ACTIVE_STATES
        for trace in (traces or {}).values():
            for x, y in zip(trace.get("x", ()), trace.get("y", ()), strict=False):
                minute = (x - start_ms) // MINUTE_MS
                if 0 <= minute < MINUTES and y is not None:
                    row.add(minute, y)
    ordered = sorted(rows.values(), key=_least_busy_first)
    return {"start": start_ms, "minutes": MINUTES, "rows": [row.as_dict() for row in ordered], "simulated": simulated}


def _least_busy_first(row: _Row) -> tuple:
    samples = sum(row.counts)
    return (samples == 0, sum(row.totals) / samples if samples else 0.0, row.username)
