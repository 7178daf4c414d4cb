"""How a sweep fares, read from its runs: done, running, waiting, and the best run by a result the user picks."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Prefetch, QuerySet

from core.choices import TERMINAL_STATES, JobState
from jobs.models import Job

from .models import Sweep, SweepRun

WAITING = {JobState.QUEUED, JobState.SUBMITTING, JobState.PENDING}


@dataclass(frozen=True)
class Progress:
    total: int
    done: int
    running: int
    waiting: int
    completed: int
    held: int = 0  # of the waiting, those a sweep going run by run has not let out yet (sweeps/release.py)
    cancelled: int = 0  # of the done: a run cancelled (by its student, cancel-all, a budget) did not fail

    @property
    def failed(self) -> int:
        """Of the done, those that neither completed nor were cancelled: failed, timed out, lost, refused."""
        return self.done - self.completed - self.cancelled

    @property
    def ended(self) -> bool:
        return self.done == self.total


def with_runs(sweeps: QuerySet[Sweep]) -> QuerySet[Sweep]:
    """Sweeps with their runs' jobs, in one more query whatever their number (a list of sweeps)."""
    return sweeps.prefetch_related(Prefetch("runs", queryset=SweepRun.objects.select_related("job__template")))


def runs_of(sweep: Sweep) -> list[Job]:
    """The sweep's runs in task order, each with its `task_index` (prefetched by with_runs, or read now)."""
    runs = sorted(
        sweep.runs.all() if _prefetched(sweep) else sweep.runs.select_related("job__template"),
        key=lambda run: run.index,
    )
    for run in runs:
        run.job.task_index = run.index  # type: ignore[attr-defined]  # read by the page and the API
    return [run.job for run in runs]


def progress(jobs: list[Job]) -> Progress:
    states = [job.state for job in jobs]
    return Progress(
        total=len(states),
        done=sum(state in TERMINAL_STATES for state in states),
        running=states.count(JobState.RUNNING),
        waiting=sum(state in WAITING for state in states),
        completed=states.count(JobState.COMPLETED),
        held=sum(job.state == JobState.QUEUED and job.submit_attempts == 0 for job in jobs),
        cancelled=states.count(JobState.CANCELLED),
    )


def _prefetched(sweep: Sweep) -> bool:
    return "runs" in getattr(sweep, "_prefetched_objects_cache", {})
