"""What would start a pending job sooner, worked out from one cycle's view of the queue (clusters/backends/queue.py).

Only what the cluster reported is used: running jobs' GPUs and nodes, pending jobs' order and SLURM's start
estimates, and the partition's GPUs per node the cluster reported at Test connection (Cluster.partition_limits).
Where those cannot show that a change helps, nothing is suggested: an advice that does not start the job sooner
costs the student their place in the queue.

Backfill, as SLURM does it: a job behind others may start now if the GPUs it asks for are free now AND it ends (by
its time limit) before the first job ahead of it is due to start on them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from clusters.backends.queue import QueuedJob, QueueView
from clusters.limits import PartitionLimits

from .models import Job
from .rightsize import within_template

MIN_WINDOW_MINUTES = 5  # a gap shorter than this is not worth launching again for


def _start_order(job: QueuedJob) -> tuple:
    """SLURM considers pending jobs by priority, then by submission (then id)."""
    submitted = job.submitted_at.timestamp() if job.submitted_at else float("inf")
    return (-(job.priority or 0), submitted, int(job.scheduler_id) if job.scheduler_id.isdigit() else 0)


@dataclass
class Advice:
    sentences: list[str] = field(default_factory=list)
    suggested: dict[str, int] = field(default_factory=dict)  # template parameter → value


class Cycle:
    """One poll cycle's queue, indexed once for every pending job of the cluster."""

    def __init__(self, view: QueueView, limits: dict[str, PartitionLimits], now: datetime):
        self.view, self.limits, self.now = view, limits, now
        self.by_id = {job.scheduler_id: job for job in view.jobs}
        self.queues: dict[str, list[QueuedJob]] = defaultdict(list)
        self.used: Counter[str] = Counter()  # node → GPUs held by running jobs
        self.nodes: dict[str, set[str]] = defaultdict(set)  # partition → nodes its jobs run or are planned on
        self.ends: dict[str, list[datetime]] = defaultdict(list)  # partition → when its running jobs hit their limit
        for job in view.pending():
            self.queues[job.partition].append(job)
            self.nodes[job.partition].update(job.nodes)
        for queue in self.queues.values():
            queue.sort(key=_start_order)
        self.busy_nodes: set[str] = set()
        for job in view.running():
            self.busy_nodes.update(job.nodes)
            self.nodes[job.partition].update(job.nodes)
            for node in job.nodes:
                self.used[node] += job.gpus_per_node
        for partition, nodes in self.nodes.items():
            self.ends[partition] = sorted(
                job.end_at for job in view.running() if job.end_at and job.end_at > now and nodes & set(job.nodes)
            )

    def position(self, job: QueuedJob) -> tuple[int, int] | None:
        """(1 = next to start, jobs pending in its partition), where the scheduler keeps a queue order."""
        if not self.view.ordered:
            return None
        queue = self.queues[job.partition]
        return queue.index(job) + 1, len(queue)

    def free_gpus(self, partition: str) -> int | None:
        """The most GPUs free now on one node of the partition; None where the cluster has not said how many a node
        has. A node the view cannot place (busy with another partition's jobs only) counts as busy: never more."""
        limits = self.limits.get(partition)
        if limits is None or not limits.gpus_per_node:
            return None
        known = self.nodes[partition]
        free = [max(0, limits.gpus_per_node - self.used[node]) for node in known]
        if limits.nodes - len(known | self.busy_nodes) > 0:
            free.append(limits.gpus_per_node)
        return max(free, default=0)

    def window_minutes(self, job: QueuedJob) -> int | None:
        """Whole minutes until the first job ahead of this one is due to start; None: none ahead has a start."""
        queue = self.queues[job.partition]
        ahead = queue[: queue.index(job)]
        starts = [other.start_at for other in ahead if other.start_at and other.start_at > self.now]
        return int((min(starts) - self.now).total_seconds() // 60) if starts else None

    def minutes_to_next_end(self, partition: str) -> int | None:
        ends = self.ends.get(partition) or []
        return max(1, int((ends[0] - self.now).total_seconds() // 60)) if ends else None


def advise(job: Job, queued: QueuedJob, cycle: Cycle) -> Advice:
    """The advice for one of the portal's pending jobs; empty where nothing the student can change would help."""
    if not cycle.view.ordered or not queued.for_resources or not queued.gpus_per_node or queued.node_count != 1:
        return Advice()
    free = cycle.free_gpus(queued.partition)
    if free is None:
        return Advice()
    window, limit, asked = cycle.window_minutes(queued), queued.time_limit_minutes, queued.gpus_per_node
    too_long = window is not None and limit is not None and limit > window
    if free >= asked and not too_long:
        return Advice(["The GPUs it asks for are free now: SLURM should start it at its next scheduling pass."])
    if free == 0 or (too_long and window is not None and window < MIN_WINDOW_MINUTES):
        return Advice([_busy(cycle.minutes_to_next_end(queued.partition))])
    return _smaller(job, free, asked, window if too_long else None)


def _busy(next_end: int | None) -> str:
    when = f" The first of them reaches its time limit in {next_end} min" if next_end else ""
    return (
        f"Every GPU it could use is held by running jobs or kept for jobs ahead of it.{when}; it may start earlier "
        "if they finish sooner. Asking for fewer GPUs or a shorter limit would not start it sooner."
    )


def _smaller(job: Job, free: int, asked: int, window: int | None) -> Advice:
    """Fewer GPUs (what is free now) and/or a limit that ends before the next job ahead starts (backfill)."""
    advice = Advice()
    if free < asked and within_template(job, "gpus_per_node", free) == free:
        advice.suggested["gpus_per_node"] = free
    if window is not None:
        minutes = within_template(job, "time_minutes", window)
        if minutes is not None and minutes <= window:
            advice.suggested["time_minutes"] = minutes
    needs_gpus, needs_time = free < asked, window is not None
    if needs_gpus != ("gpus_per_node" in advice.suggested) or needs_time != ("time_minutes" in advice.suggested):
        return Advice([_template_bound(free, asked, window)])
    changes = []
    if needs_gpus:
        changes.append(f"{free} GPU{'s' if free > 1 else ''} instead of {asked}")
    if needs_time:
        changes.append(f"a time limit of {window} minutes or less")
    gap = f", before the next job ahead of it is due to start in {window} min" if needs_time else ""
    advice.sentences.append(
        f"{free} GPU{'s are' if free > 1 else ' is'} free now{gap}: with {' and '.join(changes)} SLURM could "
        "start it now (backfill)."
    )
    return advice


def _template_bound(free: int, asked: int, window: int | None) -> str:
    gap = f" for at most {window} minutes" if window is not None else ""
    return f"{free} of the {asked} GPUs it asks for are free now{gap}, but its template allows no smaller job."
