"""The right-size report of a finished job: what it asked for against what it used, in plain advice, and the values
a right-sized relaunch would ask for instead.

Figures come from two records and nothing else: the telemetry summary (GPU utilization, peak GPU memory) and SLURM
accounting (jobs.models.JobUsage: TotalCPU, MaxRSS, elapsed). A figure whose record is missing is left out, never
guessed. Suggested values stay inside the template's schema (its min and max), so the prefilled launch form is valid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Avg, Count, ExpressionWrapper, F, FloatField
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import NullIf
from django.utils import timezone

from clusters.kinds import kind_of
from core.choices import TERMINAL_STATES, JobState

from .models import Job

GIB = 1024**3
LOW = 50.0  # % of a resource used below which the report says to ask for less
HIGH = 90.0  # % of host memory used above which the report warns of running out
GPU_LOW = 30.0  # mean GPU utilization (%) below which fewer GPUs would do
HEADROOM = 1.5  # what a suggestion adds on top of what was used
MIN_RUN_SECONDS = 10  # a shorter run is start-up and not much else: its figures say nothing of what the work needs


@dataclass(frozen=True)
class Line:
    resource: str
    requested: str
    used: str
    percent: float | None  # used of requested; None where there is nothing to compare
    advice: str


@dataclass
class Report:
    lines: list[Line] = field(default_factory=list)
    suggested: dict[str, int] = field(default_factory=dict)  # parameter name → right-sized value
    missing: list[str] = field(default_factory=list)  # why some figures are absent, in words
    in_words: str = ""  # the suggestions under the launch form's labels: "GPUs 1, CPU cores 2"
    too_little: str = ""  # why the job gives no figures to judge by, said once instead of advice on each resource
    simulated: str = ""  # why the GPU figures are not judged: the demo's stand-in made them up

    @property
    def changes(self) -> bool:
        return bool(self.suggested)


def within_template(job: Job, name: str, value: int) -> int | None:
    """`value` inside the template's bounds for parameter `name`; None if the template has no such parameter."""
    param = next((p for p in job.template.schema() if p.name == name), None)
    if param is None or param.type != "int":
        return None
    if param.min is not None:
        value = max(value, int(param.min))
    if param.max is not None:
        value = min(value, int(param.max))
    return value


def _suggest(report: Report, job: Job, name: str, value: int) -> bool:
    """Record a new value for `name` when the template has it and it differs from what the job asked."""
    suggested = within_template(job, name, value)
    if suggested is None or suggested == job.params.get(name):
        return False
    report.suggested[name] = suggested
    return True


def _elapsed_seconds(job: Job, accounted) -> int | None:
    if accounted is not None:
        return accounted.elapsed_seconds
    if job.started_at and job.finished_at:
        return int((job.finished_at - job.started_at).total_seconds())
    return None


def _minutes(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def plural(count: float, noun: str, nouns: str | None = None) -> str:
    """ "1 GPU", "2 GPUs", "1 minute": the count with its noun agreeing."""
    return f"{count:g} {noun if count == 1 else (nouns or noun + 's')}"


def _too_little(job: Job, elapsed: int | None) -> str:
    """Why this job's figures are no ground for advice, in words; "" when they are."""
    if elapsed is None or job.state == JobState.TIMED_OUT:
        return ""
    if elapsed < MIN_RUN_SECONDS:
        how = "was cancelled" if job.state == JobState.CANCELLED else "ended"
        return (
            f"The job {how} after {_minutes(elapsed)}, too short a run to tell what it needs: "
            f"no advice on its resources. A run of {MIN_RUN_SECONDS} s or more gets one."
        )
    return ""


def report_for(job: Job) -> Report | None:
    """The report of an ended job that ran; None for one still running or that never started."""
    if not job.is_terminal or job.started_at is None or job.state == JobState.SUBMIT_FAILED:
        return None
    accounted = getattr(job, "accounted", None)
    summary = getattr(job, "summary", None)
    report = Report()
    report.simulated = SIMULATED if summary is not None and summary.simulated_gpus else ""
    report.too_little = _too_little(job, _elapsed_seconds(job, accounted))
    if report.too_little:
        return report
    _gpus(report, job, summary)
    _cpus_and_memory(report, job, accounted)
    _wall_time(report, job, accounted)
    report.in_words = params_in_words(job, report.suggested)
    return report


def params_in_words(job: Job, values: dict) -> str:
    """Parameter values under the launch form's labels: "GPUs 1, CPU cores 2"."""
    labels = {p.name: p.label for p in job.template.schema()}
    return ", ".join(f"{labels.get(name, name)} {value}" for name, value in values.items())


SIMULATED = (
    "Simulated GPUs: this cluster's nvidia-smi is the demo's stand-in, which replays recorded figures whatever the job "
    "does. Its GPU utilization and memory say nothing about this job, so this report gives no GPU advice; run on a "
    "real GPU node for that."
)


def _gpus(report: Report, job: Job, summary) -> None:
    if not job.gpus:
        return
    if report.simulated:
        return
    per_node = int(job.params.get("gpus_per_node") or job.gpus)
    mean = summary.mean_gpu_util if summary else None
    if mean is None:
        report.missing.append("GPU utilization: the portal's collector took no GPU samples of this job.")
    else:
        advice = "The GPUs were busy; keep this number."
        if mean < GPU_LOW:
            fewer = max(1, math.ceil(per_node * mean / 70))
            if fewer < per_node and _suggest(report, job, "gpus_per_node", fewer):
                advice = (
                    f"The GPUs were mostly idle: {plural(fewer, 'GPU')} per node would do, "
                    "and a smaller job starts sooner."
                )
            else:
                advice = "The GPU was mostly idle: check that the code runs on it (e.g. tensors moved to cuda)."
        elif job.gpus == 1:
            advice = "The GPU was busy; keep this number."
        their = "its" if job.gpus == 1 else "their"
        report.lines.append(Line("GPUs", f"{job.gpus}", f"{mean:.0f} % of {their} time on average", None, advice))
    peak = summary.peak_gpu_memory_mib if summary else None
    total = summary.gpu_memory_total_mib if summary else None
    if peak is not None and total:
        percent = round(100 * peak / total, 1)
        advice = "The most any GPU held."
        if percent > HIGH:
            advice += " Close to full: a bigger batch would run out of GPU memory."
        elif percent < LOW:
            advice += " A GPU with less memory (or a shared slice of one) would do."
        report.lines.append(
            Line("GPU memory", f"{total / 1024:.0f} GiB per GPU", f"{peak / 1024:.1f} GiB at peak", percent, advice)
        )
    elif peak is not None:
        report.lines.append(
            Line(
                "GPU memory", plural(job.gpus, "GPU"), f"{peak / 1024:.1f} GiB at peak", None, "The most any GPU held."
            )
        )


def _cpus_and_memory(report: Report, job: Job, accounted) -> None:
    if accounted is None:
        report.missing.append(f"CPU and host memory: {_why_no_accounting(job)}")
        return
    efficiency = accounted.cpu_efficiency
    if efficiency is not None:
        busy = accounted.cpu_seconds / max(accounted.elapsed_seconds, 1)
        if efficiency >= LOW:
            advice = (
                "The core was busy; keep this number."
                if accounted.cpus == 1
                else "The cores were busy; keep this number."
            )
        elif accounted.cpus == 1:
            advice = "The core was mostly idle, but one is the least a job asks for: nothing to change."
        else:
            fewer = max(1, math.ceil(busy * HEADROOM))
            if _suggest(report, job, "cpus_per_task", fewer):
                advice = (
                    f"On average {busy:.1f} of {accounted.cpus} cores were busy: "
                    f"ask for {report.suggested['cpus_per_task']}."
                )
            else:
                advice = (
                    f"On average {busy:.1f} of {accounted.cpus} cores were busy; "
                    "more data loader workers would use the rest."
                )
        report.lines.append(Line("CPU cores", f"{accounted.cpus}", f"{busy:.1f} on average", efficiency, advice))
    requested, peak = accounted.requested_memory_bytes, accounted.max_rss_bytes
    if requested and peak:
        percent = round(100 * peak / requested, 1)
        advice = "About right."
        if percent > HIGH:
            more = math.ceil(peak * HEADROOM / GIB)
            advice = "Close to the limit: a bigger batch or dataset would be killed for lack of memory."
            if _suggest(report, job, "mem_gb", more):
                advice += f" Ask for {report.suggested['mem_gb']} GB."
        elif percent < LOW:
            advice = "Much more than needed."
            if _suggest(report, job, "mem_gb", max(1, math.ceil(peak * HEADROOM / GIB))):
                advice += f" Ask for {report.suggested['mem_gb']} GB."
        report.lines.append(
            Line("Host memory", f"{requested / GIB:.1f} GiB", f"{peak / GIB:.2f} GiB at peak", percent, advice)
        )


def _why_no_accounting(job: Job) -> str:
    """Why a job has no accounting row, from what Test connection stored on its cluster (the one source of truth)."""
    kind = kind_of(job.cluster.kind)
    if not kind.keeps_usage(job.cluster):
        return kind.no_usage_reason(job.cluster)
    arrives_within = timedelta(seconds=kind.usage_arrives_within)
    if job.finished_at and timezone.now() - job.finished_at < arrives_within:
        return "accounting figures arrive after the job ends (SLURM stores them within a minute or two): reload then."
    return "SLURM accounting kept no figures of this job."


def _wall_time(report: Report, job: Job, accounted) -> None:
    limit = job.params.get("time_minutes") or (accounted.time_limit_minutes if accounted else None)
    elapsed = _elapsed_seconds(job, accounted)
    if not limit or elapsed is None:
        return
    percent = round(100 * elapsed / (limit * 60), 1)
    if job.state == JobState.TIMED_OUT:
        advice = "The job ran out of time."
        if _suggest(report, job, "time_minutes", int(limit) * 2):
            advice += f" Ask for {plural(report.suggested['time_minutes'], 'minute')}, or save checkpoints and resume."
        else:
            advice += " The template allows no more: save checkpoints and resume in a second job."
    elif job.state != JobState.COMPLETED:
        advice = "The job did not run to its end, so its time says nothing about the limit it needs."
    elif percent < LOW:
        advice = "A shorter limit often starts sooner (SLURM backfills short jobs into gaps)."
        if _suggest(report, job, "time_minutes", max(1, math.ceil(elapsed * HEADROOM / 60))):
            advice += f" Ask for {plural(report.suggested['time_minutes'], 'minute')}."
        else:
            advice += " The template allows no shorter limit."
    else:
        advice = "About right."
    report.lines.append(Line("Wall time", f"{limit} min", _minutes(elapsed), percent, advice))


def rightsized_params(job: Job) -> dict:
    """The job's values with the report's suggestions applied: the prefilled form of "Launch again right-sized"."""
    found = report_for(job)
    return {**job.params, **(found.suggested if found else {})}


@dataclass(frozen=True)
class StudentEfficiency:
    username: str
    jobs: int  # ended jobs that ran for MIN_RUN_SECONDS or more
    accounted: int  # of them, those SLURM accounting recorded
    gpu_util: float | None  # mean of the jobs' mean GPU utilization, %
    cpu_efficiency: float | None  # mean TotalCPU / (elapsed x cores), %
    memory_used: float | None  # mean MaxRSS of requested memory, %
    time_used: float | None  # mean elapsed of the time limit, %


def _ratio(numerator: str, *denominator: str):
    """100 x numerator / product(denominator) per row in SQL, NULL where the denominator is 0 or missing."""
    below: F | CombinedExpression = F(denominator[0])
    for name in denominator[1:]:
        below = below * F(name)
    return ExpressionWrapper(100.0 * F(numerator) / NullIf(below, 0), output_field=FloatField())


def class_efficiency(course) -> list[StudentEfficiency]:
    """Each student's ended jobs of the course, averaged: one aggregate query, whatever the number of jobs."""
    rows = (
        Job.objects.filter(
            course=course,
            state__in=TERMINAL_STATES,
            # a job cancelled in the second it started shows only start-up figures; it would skew the means
            finished_at__gte=F("started_at") + timedelta(seconds=MIN_RUN_SECONDS),
        )
        .values("owner__username")
        .annotate(
            n=Count("pk"),
            accounted_n=Count("accounted"),
            gpu_util=Avg("summary__mean_gpu_util"),
            cpu_efficiency=Avg(_ratio("accounted__cpu_seconds", "accounted__elapsed_seconds", "accounted__cpus")),
            memory_used=Avg(_ratio("accounted__max_rss_bytes", "accounted__requested_memory_bytes")),
            time_used=Avg(_ratio("accounted__elapsed_seconds", "accounted__time_limit_minutes") / 60.0),
        )
        .order_by("owner__username")
    )
    return [
        StudentEfficiency(
            username=row["owner__username"],
            jobs=row["n"],
            accounted=row["accounted_n"],
            gpu_util=_round(row["gpu_util"]),
            cpu_efficiency=_round(row["cpu_efficiency"]),
            memory_used=_round(row["memory_used"]),
            time_used=_round(row["time_used"]),
        )
        for row in rows
    ]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
