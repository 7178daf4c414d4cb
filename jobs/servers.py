"""What a student does with a running server from its job page, whatever its cluster's kind: scale it, send it a
prompt, load-test it. The kind checks and performs each action (Kind.plan_scale, scale, try_it, start_load_test);
this module holds what the portal owes around it: the course's term (no action once it ended, as for launches), the
course quota for a new size, the job's script and GPU count, the events on the job's timeline, and the last load test's
figures, kept for comparisons once the cluster no longer has them.

Every function takes a job the caller already got through jobs.access; nothing here looks jobs up.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from clusters import kinds
from clusters.backends.kind import ActionRefused
from core import load_reports
from core.choices import EventKind
from courses import terms

from .access import NOT_YOURS_TO_ACT, may_act, may_teach
from .launch import QuotaExceeded, check_quota
from .models import Job, LoadTestResult
from .states import record

__all__ = [
    "ActionRefused",
    "keep",
    "keep_report_in_log",
    "load_test_report",
    "refusal",
    "scale",
    "start_load_test",
    "try_it",
]


def _kind(job: Job):
    return kinds.kind_of(job.cluster.kind)


def refusal(user, job: Job) -> str | None:
    """Why this user may take no action on the job's server now (a TA's is to see it; the course's term, as for a
    launch), or None."""
    if not may_act(user, job):
        return NOT_YOURS_TO_ACT
    return terms.launch_refusal(job.course, teaches=may_teach(user, job.course))


def _check(user, job: Job) -> None:
    why = refusal(user, job)
    if why:
        raise ActionRefused(why)


def scale(user, job: Job, replicas: int) -> str:
    """Resize the server within the course quota (its other jobs counted, this one at its new size)."""
    _check(user, job)
    kind = _kind(job)
    plan = kind.plan_scale(job, replicas)
    with transaction.atomic():
        try:
            check_quota(job.owner, job.course, plan.gpus, replacing=job)
        except QuotaExceeded as exc:
            raise ActionRefused(str(exc)) from None
        message = kind.scale(job, replicas)
        Job.objects.filter(pk=job.pk).update(gpus=plan.gpus, script=plan.script, updated_at=timezone.now())
        record(job, EventKind.NOTE, message, actor=user)
    return message


def try_it(user, job: Job, prompt: str) -> Iterator[str]:
    _check(user, job)
    return _kind(job).try_it(job, prompt)


def start_load_test(user, job: Job, *, prompts: int = 64, concurrency: int = 8, output_len: int = 64) -> str:
    _check(user, job)
    name = _kind(job).start_load_test(job, prompts=prompts, concurrency=concurrency, output_len=output_len)
    record(job, EventKind.NOTE, f"Load test {name} started ({prompts} prompts, {concurrency} at once).", actor=user)
    return name


# The figures of a load generator's report (core/load_reports.py) a comparison puts side by side.
REPORT_FIGURES = load_reports.FIGURES
IN_JOB_REPORT = load_reports.IN_JOB  # the name the report of a generator in the job's own pod goes by


@dataclass(frozen=True)
class KeptReport:
    """The last report the portal kept, shown where the cluster has none any more (its pods are gone)."""

    name: str
    figures: dict
    phase: str = "as the portal kept it"
    error: str = ""


def load_test_report(job: Job):
    """The newest load test's report, read from the cluster; one with figures is kept as the job's last (keep). Where
    the cluster has none, the last one kept."""
    report = _kind(job).load_test_report(job)
    if report is not None and report.figures:
        keep(job, report.name, report.figures)
    if report is None:
        kept = LoadTestResult.objects.filter(job=job).first()
        return KeptReport(kept.name, kept.figures) if kept is not None and kept.figures else None
    return report


def keep_report_in_log(job: Job, log: str) -> bool:
    """Keep the report a load generator printed in the job's own log (vLLM's benchmark beside its server in one pod),
    read from the log the portal kept when the job ended; False when the log holds none."""
    figures = load_reports.read_report(log)
    if figures:
        keep(job, load_reports.IN_JOB, figures)
    return bool(figures)


def keep(job: Job, name: str, figures: dict) -> None:
    """Store a report's figures as the job's last load test: its numbers only (a pod's log line is the student's to
    write), and no write when the same report was kept already."""
    numbers = {
        key: float(value)
        for key in REPORT_FIGURES
        if isinstance(value := figures.get(key), int | float) and not isinstance(value, bool) and math.isfinite(value)
    }
    name = str(name)[:128]
    kept = LoadTestResult.objects.filter(job=job).first()
    if kept is not None and kept.name == name and kept.figures == numbers:
        return
    LoadTestResult.objects.update_or_create(job=job, defaults={"name": name, "figures": numbers})
