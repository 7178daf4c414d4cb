"""Series that outlive the ring: the collector's frames, kept in PostgreSQL as ten-second buckets and trainer points.

Invariants:
- The recorder sees every job and node frame the collector publishes, on the collector's clock.
- Buckets are aligned to BUCKET_MS; a flush at time F stores every bucket that ended by F's bucket boundary and
  marks the chunk's end there, so stored chunks and the ring's frames after that end never overlap or leave a
  hole between them.
- One flush writes one row per job or node with new numbers (bulk_create), every FLUSH_SECONDS, and on stop.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from . import series as charts
from .series import BUCKET_MS

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 60.0
NODE_SERIES_DAYS = 2  # a node page shows its last hour; a job keeps its series as long as the job row
NODE_HISTORY_SECONDS = 3600

Owner = tuple[str, str]  # ("job", job id) or ("node", node id)


@dataclass
class Bucket:
    start: int
    count: int = 0
    total: float = 0.0
    low: float = float("inf")
    high: float = float("-inf")

    def add(self, y: float) -> None:
        self.count += 1
        self.total += y
        self.low, self.high = min(self.low, y), max(self.high, y)


def owner_of(group: str) -> Owner | None:
    kind, _, ident = group.removeprefix("telemetry.").partition(".")
    return (kind, ident) if kind in ("job", "node") else None


class SeriesRecorder:
    def __init__(self, flush_seconds: float = FLUSH_SECONDS):
        self.flush_seconds = flush_seconds
        self.open: dict[tuple[Owner, str, str], tuple[str, Bucket]] = {}
        self.pending: dict[Owner, dict[str, dict[str, dict]]] = {}
        self.first_ms: dict[Owner, int] = {}
        self.last_flush: float | None = None
        self.last_cost: tuple[int, float] = (0, 0.0)  # rows, seconds of the last flush

    def add(self, frames: dict[str, dict], now: float) -> None:
        """The frames of one tick ({group: frame}), published at `now`."""
        t = int(now * 1000)
        for group, frame in frames.items():
            owner = owner_of(group)
            if owner is None:
                continue
            self.first_ms.setdefault(owner, t)
            for chart, key, name, x, y in charts.points({**frame, "t": t}):
                if y is None:
                    continue
                if charts.by_step(chart):
                    trace = self._trace(owner, chart, key, name, extra=False)
                    trace["x"].append(x)
                    trace["y"].append(y)
                else:
                    self._bucket(owner, chart, key, name, t).add(y)

    def _bucket(self, owner: Owner, chart: str, key: str, name: str, t: int) -> Bucket:
        start = t - t % BUCKET_MS
        held = self.open.get((owner, chart, key))
        if held is None or held[1].start != start or held[0] != name:  # a new bucket, or another job's GPU now
            if held is not None:
                self._close(owner, chart, key, *held)
            held = self.open[(owner, chart, key)] = (name, Bucket(start))
        return held[1]

    def _close(self, owner: Owner, chart: str, key: str, name: str, bucket: Bucket) -> None:
        trace = self._trace(owner, chart, key, name, extra=True)
        trace["x"].append(bucket.start + BUCKET_MS // 2)
        trace["y"].append(round(bucket.total / bucket.count, 3))
        trace["lo"].append(round(bucket.low, 3))
        trace["hi"].append(round(bucket.high, 3))

    def _trace(self, owner: Owner, chart: str, key: str, name: str, *, extra: bool) -> dict:
        """The pending trace for `key` under `name`; a time trace that another name takes (a node's GPU another job
        holds now) is set aside under its own key first (charts.segment_key), keeping its holder's name."""
        traces = self.pending.setdefault(owner, {}).setdefault(chart, {})
        held = traces.get(key)
        if held is not None and held["name"] != name and held["x"] and not charts.by_step(chart):
            traces[charts.segment_key(key, held["x"][0])] = held
            held = None
        elif held is not None:
            held["name"] = name  # nothing recorded under the old name yet, or a trainer chart (by step)
        if held is None:
            held = traces[key] = {"name": name, "x": [], "y": [], **({"lo": [], "hi": []} if extra else {})}
        return held

    # -- flushing -----------------------------------------------------------------------------------------------
    def due(self, now: float) -> bool:
        if self.last_flush is None:
            self.last_flush = now
        return now - self.last_flush >= self.flush_seconds

    def flush(self, now: float, *, closing: bool = False) -> int:
        """Store what is complete (everything when closing); returns the rows written."""
        from django.db import transaction

        from jobs.models import Job

        from .models import Node, SeriesChunk

        started = time.monotonic()
        t = int(now * 1000)
        boundary = t if closing else t - t % BUCKET_MS
        for (owner, chart, key), (name, bucket) in list(self.open.items()):
            if closing or bucket.start + BUCKET_MS <= boundary:
                self._close(owner, chart, key, name, bucket)
                del self.open[(owner, chart, key)]
        pending = self.pending
        job_ids = {ident for (kind, ident) in pending if kind == "job"}
        node_ids = {ident for (kind, ident) in pending if kind == "node"}
        known = {("job", str(pk)) for pk in Job.objects.filter(pk__in=job_ids).values_list("pk", flat=True)}
        known |= {("node", str(pk)) for pk in Node.objects.filter(pk__in=node_ids).values_list("pk", flat=True)}
        rows = [
            SeriesChunk(
                **{f"{kind}_id": ident},
                start=_dt(min(self.first_ms.get((kind, ident), boundary), boundary)),
                end=_dt(boundary),
                series=data,
            )
            for (kind, ident), data in pending.items()
            if (kind, ident) in known  # else deleted since
        ]
        with transaction.atomic():
            SeriesChunk.objects.bulk_create(rows)
            if self.last_flush is None or int(now) // 3600 != int(self.last_flush) // 3600:
                old = _dt(t) - timedelta(days=NODE_SERIES_DAYS)
                SeriesChunk.objects.filter(node__isnull=False, end__lt=old).delete()
        # Written: only now is it no longer pending (a failed write is retried by the next flush).
        self.pending = {}
        for owner in pending:
            self.first_ms[owner] = boundary
        self._forget(pending)
        self.last_flush = now
        self.last_cost = (len(rows), time.monotonic() - started)
        return len(rows)

    def _forget(self, flushed: dict) -> None:
        """Owners with no open bucket and nothing flushed just now have ended: drop their start marks."""
        active = {owner for owner, _, _ in self.open} | set(flushed)
        for owner in [o for o in self.first_ms if o not in active]:
            del self.first_ms[owner]


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


# -- reading ------------------------------------------------------------------------------------------------------
def stored(**owner) -> tuple[charts.Series, int | None]:
    """The stored series of one job (job=…) or node (node=…, its last hour), and the end of the last chunk (ms)."""
    from .models import SeriesChunk

    chunks = SeriesChunk.objects.filter(**owner).order_by("start")
    if "node" in owner:
        chunks = chunks.filter(end__gte=datetime.now(tz=UTC) - timedelta(seconds=NODE_HISTORY_SECONDS))
    series: charts.Series = {}
    end = None
    for data, chunk_end in chunks.values_list("series", "end"):
        charts.add_stored(series, data)
        end = int(chunk_end.timestamp() * 1000)
    return series, end
