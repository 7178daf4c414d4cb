"""The load tests of a comparison's servers: requests/s, TTFT and TPOT (p50 and p95) side by side.

Read from the last report the portal kept of each server job (jobs.models.LoadTestResult, written when its job page
read the report from the cluster, jobs/servers.py), so a server that has ended still compares. A run without one has
no row; a comparison where no run has one shows no such table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from jobs.models import Job

FIGURES = ("requests_per_s", "ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "tpot_p95_ms")


@dataclass(frozen=True)
class LoadTest:
    name: str  # the load generator's Kubernetes Job
    read_at: datetime
    requests_per_s: float | None
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    tpot_p50_ms: float | None
    tpot_p95_ms: float | None
    prompts: int | None
    concurrency: int | None
    failed: int | None


def load_test_of(job: Job) -> LoadTest | None:
    """The job's last kept load test (selection.py reads it with the job), or None."""
    kept = getattr(job, "load_test", None)
    if kept is None:
        return None
    figures = kept.figures
    return LoadTest(
        kept.name,
        kept.read_at,
        *(figures.get(name) for name in FIGURES),
        *(_count(figures.get(name)) for name in ("num_prompts", "max_concurrency", "failed")),
    )


def _count(value) -> int | None:
    return None if value is None else int(value)
