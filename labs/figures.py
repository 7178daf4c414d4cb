"""The figures a check reads from a run, from what telemetry stored for it: the trainer's tok/s by step and the GPUs'
ten-second utilization and memory (SeriesChunk, the charts of static/js/telemetry-charts.json), and the run's summary
(JobSummary) where the series hold nothing. Read once the run ended; kept (FigureReading) once its summary exists."""

from __future__ import annotations

from statistics import fmean, median
from typing import Any

from django.core.exceptions import ObjectDoesNotExist

from jobs.models import Job
from telemetry.models import JobSummary, SeriesChunk

from .models import FigureReading
from .specs import Figure

FIRST_MINUTE_MS = 60_000  # warm-up: data loading, compilation, NCCL set-up
MIB_PER_GIB = 1024
CHARTS: dict[str, str] = {
    Figure.TOKENS_PER_S: "tokens",
    Figure.GPU_UTIL: "gpu-util",
    Figure.PEAK_GPU_MEMORY_GIB: "gpu-memory",
}


def _traces(job: Job, chart: str) -> list[tuple[list, list]]:
    stored = SeriesChunk.objects.filter(job=job, series__has_key=chart).values_list(f"series__{chart}", flat=True)
    return [
        (trace.get("x") or [], trace.get("y") or [])
        for chunk in stored
        for trace in (chunk or {}).values()
        if isinstance(trace, dict)
    ]


def _numbers(values) -> list[float]:
    return [float(v) for v in values if isinstance(v, int | float)]


def _from_series(job: Job, figure: str) -> float | None:
    chart = CHARTS.get(figure)
    if chart is None:
        return None
    traces = _traces(job, chart)
    if figure == Figure.TOKENS_PER_S:
        values = _numbers(y for _, ys in traces for y in ys)
        return round(median(values), 1) if values else None
    if figure == Figure.GPU_UTIL:
        starts = _numbers(xs[0] for xs, _ in traces if xs)
        if not starts:
            return None
        after = min(starts) + FIRST_MINUTE_MS
        values = _numbers(y for xs, ys in traces for x, y in zip(xs, ys, strict=False) if x >= after)
        return round(fmean(values), 1) if values else None
    values = _numbers(y for _, ys in traces for y in ys)
    return round(max(values) / MIB_PER_GIB, 2) if values else None


def _from_summary(summary: JobSummary | None, figure: str) -> float | None:
    if summary is None:
        return None
    if figure == Figure.FINAL_LOSS:
        return summary.final_loss
    if figure == Figure.PEAK_GPU_MEMORY_GIB and summary.peak_gpu_memory_mib is not None:
        return round(summary.peak_gpu_memory_mib / MIB_PER_GIB, 2)
    return None


def figure_of(job: Job, figure: str, known: dict[tuple[Any, str], FigureReading]) -> float | None:
    """The run's figure (None when it recorded none); `known` holds the readings already loaded."""
    reading = known.get((job.pk, figure))
    if reading is not None:
        return reading.value
    try:
        summary: JobSummary | None = job.summary
    except ObjectDoesNotExist:
        summary = None
    value = _from_series(job, figure)
    if value is None:
        value = _from_summary(summary, figure)
    if summary is not None and job.is_terminal:  # telemetry is done with the run: its figures are final
        known[(job.pk, figure)], _ = FigureReading.objects.get_or_create(
            job=job, figure=figure, defaults={"value": value}
        )
    return value
