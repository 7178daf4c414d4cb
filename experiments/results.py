"""The results table of a comparison: one row per run, its figures side by side, and its speed against a baseline.

Loss and tok/s come from the run's stored trainer points (the curves the charts draw): final and lowest loss, the
median tok/s (the middle of the run, which the first slow steps and a last short one do not move). GPU figures come
from the summary telemetry stored when the run ended, or, while it runs, from its stored GPU series; wall time from
SLURM accounting where the cluster has it, else the run's own start and end. A figure with no record is left empty.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from core.choices import JobState
from jobs import rightsize
from jobs.models import Job
from telemetry.summary import gpu_hours

from .curves import RunCurves


@dataclass
class Results:
    final_loss: float | None
    lowest_loss: float | None
    median_tok_s: float | None
    tok_s_per_gpu: float | None
    wall_seconds: int | None
    gpu_hours: float
    mean_gpu_util: float | None
    peak_gpu_memory_mib: float | None
    simulated_gpus: bool
    verdict: str
    speedup: float | None = None  # median tok/s over the baseline's
    scaling_efficiency: float | None = None  # speed-up per added GPU, %, when the GPUs differ from the baseline's

    @property
    def wall_time(self) -> timedelta | None:
        return None if self.wall_seconds is None else timedelta(seconds=self.wall_seconds)


def results_for(job: Job, curves: RunCurves, now: datetime | None = None) -> Results:
    now = now or timezone.now()
    summary = getattr(job, "summary", None)
    losses, tokens = curves.values("loss"), curves.values("tokens")
    median = round(statistics.median(tokens), 1) if tokens else None
    util, memory = curves.values("gpu-util"), curves.values("gpu-memory")
    return Results(
        final_loss=losses[-1] if losses else (summary.final_loss if summary else None),
        lowest_loss=min(losses) if losses else None,
        median_tok_s=median,
        tok_s_per_gpu=round(median / job.gpus, 1) if median is not None and job.gpus else None,
        wall_seconds=_wall_seconds(job, now),
        gpu_hours=summary.gpu_hours if summary else gpu_hours(job.gpus, job.started_at, job.finished_at or now),
        mean_gpu_util=summary.mean_gpu_util if summary else (round(sum(util) / len(util), 1) if util else None),
        peak_gpu_memory_mib=summary.peak_gpu_memory_mib if summary else (max(memory) if memory else None),
        simulated_gpus=bool(summary and summary.simulated_gpus),
        verdict=verdict(job),
    )


def _wall_seconds(job: Job, now: datetime) -> int | None:
    accounted = getattr(job, "accounted", None)
    if accounted is not None:
        return accounted.elapsed_seconds
    if job.started_at is None:
        return None
    return max(0, int(((job.finished_at or now) - job.started_at).total_seconds()))


def verdict(job: Job) -> str:
    """The right-size report (jobs/rightsize.py) in a few words, for a table cell."""
    if job.state == JobState.RUNNING:
        return "when it ends"
    report = rightsize.report_for(job)
    if report is None:
        return ""
    if report.too_little:
        return "too short to judge"
    if report.changes:
        return f"ask for {report.in_words}"
    return "right-sized" if report.lines else "no figures"


def add_speedups(results: list[Results], gpus: list[int], baseline: int) -> None:
    """Each run's median tok/s against the baseline run's; where the GPUs differ, how much of the added GPUs'
    ideal speed-up it got ("2 GPUs: 1.7 times, 85 % scaling efficiency")."""
    base = results[baseline].median_tok_s
    for result, count in zip(results, gpus, strict=True):
        if base is None or result.median_tok_s is None or not base:
            continue
        result.speedup = result.median_tok_s / base
        if count and gpus[baseline] and count != gpus[baseline]:
            result.scaling_efficiency = round(100 * result.speedup / (count / gpus[baseline]), 1)
