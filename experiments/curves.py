"""Each run's stored curves, one line per run per chart, as a comparison overlays them.

Read from what the collector stored while the run ran (telemetry's SeriesChunk rows: every trainer point by step,
ten-second GPU buckets by time), never from its log; a run still going adds the trainer points the collector keeps
in Redis for it (jobs/trainer_curve.py), which are not stored until its next flush. Step time is not stored: it is
derived from tok/s (step_time.py). A run's several GPUs become one line: the mean utilization of its GPUs, and the
memory of its fullest GPU (what decides whether a run fits). Points by time are made relative to the run's start, so
runs launched hours apart line up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from jobs.models import Job
from jobs.trainer_curve import CURVE_POINTS, recent_curve_points
from telemetry import series as charts
from telemetry.models import SeriesChunk

from .step_time import seconds_per_step, tokens_per_step

TRAINER_CHARTS = ("loss", "tokens")  # stored by the collector, by step
STEP_CHARTS = (*TRAINER_CHARTS, "step-time")  # x: the trainer's step; step time is derived (step_time.py)
TIME_CHARTS = ("gpu-util", "gpu-memory")  # x: seconds since the run started
CHARTS = STEP_CHARTS + TIME_CHARTS
COMBINE = {"gpu-util": "mean", "gpu-memory": "max"}  # a run's GPUs as one line


@dataclass
class Curve:
    x: list[float] = field(default_factory=list)
    y: list[float] = field(default_factory=list)


@dataclass
class RunCurves:
    """One run's lines by chart; `start_ms` is what the time charts' x counts from (the run's start, in ms)."""

    curves: dict[str, Curve]
    start_ms: int | None

    def values(self, chart: str) -> list[float]:
        curve = self.curves.get(chart)
        return [y for y in curve.y if y is not None] if curve else []


def stored_curves(jobs: Sequence[Job]) -> dict[str, RunCurves]:
    """{job id: its curves}, from the runs' stored chunks in one query (oldest first), and for a run still going
    the trainer points not stored yet (one Redis round trip each)."""
    stored: dict[str, charts.Series] = {str(job.pk): {} for job in jobs}
    chunks = SeriesChunk.objects.filter(job__in=[job.pk for job in jobs]).order_by("start")
    for job_id, data in chunks.values_list("job_id", "series"):
        charts.add_stored(stored[str(job_id)], {chart: data[chart] for chart in CHARTS if chart in data})
    return {str(job.pk): _run_curves(job, stored[str(job.pk)], _unstored(job)) for job in jobs}


TRAINER_FIELDS = {"loss": "loss", "tokens": "tok_s"}  # a chart and its field in a trainer point


def _unstored(job: Job) -> dict[str, list[tuple[float, float]]]:
    """A running job's newest trainer points by chart (none for a job that has ended: its series are stored)."""
    if not job.is_active:
        return {}
    points = recent_curve_points(job.pk, CURVE_POINTS)
    return {
        chart: [(p["step"], p[field]) for p in points if p.get("step") is not None and p.get(field) is not None]
        for chart, field in TRAINER_FIELDS.items()
    }


def _run_curves(job: Job, series: charts.Series, unstored: dict[str, list[tuple[float, float]]]) -> RunCurves:
    start_ms = int(job.started_at.timestamp() * 1000) if job.started_at else None
    curves: dict[str, Curve] = {}
    for chart in TRAINER_CHARTS:
        points = [(x, y) for t in series.get(chart, {}).values() for x, y in zip(t.x, t.y, strict=True)]
        points += unstored.get(chart, [])
        if points:
            curves[chart] = by_step(points)
    per_step = tokens_per_step(job)
    if per_step and "tokens" in curves:
        curves["step-time"] = Curve(*seconds_per_step(curves["tokens"].x, curves["tokens"].y, per_step))
    for chart in TIME_CHARTS:
        traces = series.get(chart, {})
        points = [(x, y) for t in traces.values() for x, y in zip(t.x, t.y, strict=True) if y is not None]
        if points:
            start_ms = start_ms if start_ms is not None else min(x for x, _ in points)
            curves[chart] = by_time(points, start_ms, COMBINE[chart])
    return RunCurves(curves, start_ms)


def by_step(points: list[tuple[float, float]]) -> Curve:
    """Trainer points in step order; a step logged twice (a resumed run) keeps its last value."""
    last = dict(points)
    steps = sorted(last)
    return Curve(steps, [last[s] for s in steps])


def by_time(points: list[tuple[float, float]], start_ms: int, how: str) -> Curve:
    """One value per bucket time (the mean or the largest of the run's GPUs then), x in seconds since start_ms."""
    grouped: dict[float, list[float]] = {}
    for x, y in points:
        grouped.setdefault(x, []).append(y)
    times = sorted(grouped)
    combine = (lambda ys: round(sum(ys) / len(ys), 2)) if how == "mean" else max
    return Curve([round((x - start_ms) / 1000, 1) for x in times], [combine(grouped[x]) for x in times])
