"""What a scheduler says of its queue, as plain data: every pending and running job it shows, read once per cycle.

A backend answers `queue()` with a QueueView (SLURM: one `squeue --start` and one `sprio`; slurmrestd: the job list
the poll already read; Kubernetes: the pending pods' conditions the poll already read). jobs/waiting.py turns it into
"why am I waiting" for each of the portal's pending jobs. Reasons are already in words for the student here: the
kind knows its scheduler's vocabulary, the jobs app does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class QueuedJob:
    """One job in the scheduler's queue, whoever owns it; `state` is "pending" or "running" (JobState values)."""

    scheduler_id: str
    state: str
    partition: str = ""
    gpus_per_node: int = 0
    node_count: int = 1
    nodes: tuple[str, ...] = ()  # running: where it runs; pending: where the scheduler plans to start it
    priority: int | None = None
    time_limit_minutes: int | None = None
    submitted_at: datetime | None = None
    start_at: datetime | None = None  # pending: the scheduler's estimate (None: it has none yet); running: started
    end_at: datetime | None = None  # running: when it reaches its time limit
    reason: str = ""  # pending: why, in words for the student
    for_resources: bool = False  # pending only for GPUs in use or jobs ahead of it: a smaller job may start sooner
    factors: tuple[tuple[str, int], ...] = ()  # pending: priority factors, (name in words, weighted value)
    place: tuple[int, int] | None = None  # pending: (1 = next, jobs waiting) as the scheduler itself counts (Kueue)
    explained: tuple[str, ...] = ()  # pending: what else the scheduler says of its queue, in sentences


@dataclass(frozen=True)
class QueueView:
    jobs: tuple[QueuedJob, ...] = ()
    ordered: bool = True  # jobs start in priority order within a partition (SLURM); False: no queue order
    has_factors: bool = False  # the scheduler said what its priorities are made of (sprio)
    note: str = ""  # what this scheduler cannot tell, for the job page
    estimates_from_history: bool = False  # no estimate of its own: the portal's, from the queue's earlier waits

    def pending(self) -> list[QueuedJob]:
        return [job for job in self.jobs if job.state == "pending"]

    def running(self) -> list[QueuedJob]:
        return [job for job in self.jobs if job.state == "running"]


@dataclass(frozen=True)
class QueueSummary:
    """A course's own queue on a cluster that keeps one (Kueue: its ClusterQueue), for the course pages."""

    name: str
    nominal_gpus: int
    used_gpus: int
    borrowed_gpus: int
    pending: int
    admitted: int
    cohort: str = ""
    policy: str = ""  # its preemption policy in words
