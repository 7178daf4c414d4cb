"""Loss and tok/s of a finished job rebuilt from its log, for runs whose trainer points were never stored.

The log is the trainer's own record (docs/architecture.md: "epoch=… loss=… tok/s=…"), read from the start through the
cluster's backend like the log API does; the points go into one SeriesChunk, as the collector would have stored
them. A job that already has stored trainer points is left alone.
"""

from __future__ import annotations

from django.utils import timezone

from jobs.logs import read_log
from jobs.models import Job

from . import series
from .models import SeriesChunk
from .parsers import parse_trainer_line

MAX_READS = 10_000  # chunks of GPULAB_LOG_CHUNK_BYTES: a bound, not a limit any lab log reaches


def has_trainer_points(job: Job) -> bool:
    return SeriesChunk.objects.filter(job=job, series__has_key="loss").exists()


def trainer_points_from_log(job: Job) -> list[dict]:
    points, offset, partial = [], 0, ""
    for _ in range(MAX_READS):
        chunk = read_log(job, offset)
        *lines, partial = (partial + chunk.data).split("\n")
        points += [p for p in map(parse_trainer_line, lines) if p is not None]
        if chunk.eof or chunk.offset == offset:
            break
        offset = chunk.offset
    last = parse_trainer_line(partial)
    points += [last] if last else []
    return [{"step": p.step, "loss": p.loss, "tok_s": p.tokens_per_s} for p in points]


def rebuild_trainer_series(job: Job) -> int:
    """Store the job's trainer points from its log unless some are stored; returns the points stored."""
    if has_trainer_points(job):
        return 0
    data: series.Series = {}
    series.add_frames(data, [{"trainer": trainer_points_from_log(job)}])
    if not data:
        return 0
    stored = {
        chart: {key: {"name": t.name, "x": t.x, "y": t.y} for key, t in traces.items()}
        for chart, traces in data.items()
    }
    start = job.started_at or job.created_at
    SeriesChunk.objects.create(job=job, start=start, end=job.finished_at or timezone.now(), series=stored)
    return len(data["loss"]["loss"].x) if "loss" in data else 0
