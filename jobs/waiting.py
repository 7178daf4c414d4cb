"""Why am I waiting: each pending job's place in its partition, SLURM's estimated start, its priority factors and
what would start it sooner, kept on a JobWait row the job page and the API read.

Read once per cluster per poll cycle (jobs/polling.py), for all of its pending jobs together: the kind's `queue()`
costs a fixed number of scheduler calls (SLURM over SSH: one `squeue --start` and one `sprio`; slurmrestd and
Kubernetes: none beyond the poll's own), and the rows are written in one upsert. A cluster that cannot say changes
nothing: the rows keep their time, and the page shows how old they are.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from clusters.backends import BackendError
from clusters.backends.queue import QueueView
from clusters.limits import PartitionLimits
from core.choices import JobState

from . import queue_history
from .models import Job, JobWait
from .rightsize import params_in_words
from .staleness import silence_allowed
from .templatetags.job_time import duration
from .wait_advice import Cycle, advise

logger = logging.getLogger(__name__)

UPDATED = ["observed_at", "reason", "partition", "position", "pending_in_partition", "estimated_start"]
UPDATED += ["priority", "factors", "advice", "suggested", "note", "estimate_learnt"]


def record(backend, cluster, jobs: list[Job], now: datetime) -> int:
    """Ask the cluster's queue once and store why each of `jobs` that is pending waits; the rows written."""
    pending = [job for job in jobs if job.state == JobState.PENDING]
    JobWait.objects.filter(job__cluster=cluster).exclude(job__state=JobState.PENDING).delete()
    if not pending:
        return 0
    try:
        view = backend.queue()
    except BackendError as exc:  # NotSupported included: the page keeps what it had, with its age
        logger.info("queue of %s: %s", cluster.name, exc)
        return 0
    limits = {name: PartitionLimits.from_dict(entry) for name, entry in (cluster.partition_limits or {}).items()}
    rows = explain(view, limits, pending, now)
    JobWait.objects.bulk_create(rows, update_conflicts=True, unique_fields=["job"], update_fields=UPDATED)
    return len(rows)


def explain(view: QueueView, limits: dict, jobs: list[Job], now: datetime) -> list[JobWait]:
    """A JobWait for each job the view lists; one the scheduler does not list yet gets none this cycle."""
    cycle = Cycle(view, limits, now)
    rows: list[JobWait] = []
    waits: dict = {}  # each queue's earlier waits, read once this cycle
    for job in jobs:
        queued = cycle.by_id.get(job.scheduler_id)
        if queued is None or queued.state != JobState.PENDING:
            continue
        place = queued.place or cycle.position(queued)
        advice = advise(job, queued, cycle)
        learnt = queue_history.estimate(job, now, waits) if view.estimates_from_history else None
        rows.append(
            JobWait(
                job=job,
                observed_at=now,
                reason=(queued.reason or job.scheduler_reason)[:255],
                partition=queued.partition[:64],
                position=place[0] if place else None,
                pending_in_partition=place[1] if place else None,
                estimated_start=learnt.start if learnt else queued.start_at,
                priority=queued.priority,
                factors=[list(pair) for pair in queued.factors],
                advice=[*queued.explained, *advice.sentences],
                suggested=advice.suggested,
                note=(learnt.note if learnt else view.note)[:255],
                estimate_learnt=learnt is not None,
            )
        )
    return rows


@dataclass(frozen=True)
class WaitPanel:
    """What the job page shows of a JobWait, at the moment the page is drawn."""

    wait: JobWait
    age: timedelta  # since the scheduler said it
    stale: bool  # older than two poll cycles: the cluster has not answered since
    starts_in: timedelta | None  # until the estimated start; None without one, zero once it is due
    sooner_in_words: str  # the suggested values under the form's labels

    @property
    def where(self) -> str:
        """The queue it waits in: a SLURM partition is named bare, a Kueue queue with its kind."""
        partition = self.wait.partition
        return partition if partition.startswith(("ClusterQueue ", "LocalQueue ")) else f"partition {partition}"

    @property
    def said(self) -> str:
        """How long ago, in steps of a minute: the state panel is sent again only when its words change
        (jobs/status_panel.py), so a pending job's panel is not redrawn every poll for a ticking second."""
        return "under a minute" if self.age < timedelta(minutes=1) else duration(self.age)


def panel_for(job: Job, now: datetime) -> WaitPanel | None:
    """The pending job's wait as last read; None for a job not pending or not yet read (one query)."""
    if job.state != JobState.PENDING:
        return None
    wait = JobWait.objects.filter(job=job).first()
    if wait is None:
        return None
    age = max(now - wait.observed_at, timedelta(0))
    starts_in = max(wait.estimated_start - now, timedelta(0)) if wait.estimated_start else None
    words = params_in_words(job, wait.suggested) if wait.suggested else ""
    return WaitPanel(wait, age, age.total_seconds() > silence_allowed(), starts_in, words)


def sooner_params(job: Job) -> dict:
    """The job's values with the wait's suggestions applied: the prefilled form of "Launch again with…"."""
    wait = JobWait.objects.filter(job=job).first() if job.state == JobState.PENDING else None
    return {**job.params, **(wait.suggested if wait else {})}


def as_data(wait: JobWait, now: datetime) -> dict:
    """The API's `wait` of a pending job."""
    return {
        "observed_at": wait.observed_at,
        "age_seconds": int(max(now - wait.observed_at, timedelta(0)).total_seconds()),
        "reason": wait.reason,
        "partition": wait.partition,
        "position": wait.position,
        "pending_in_partition": wait.pending_in_partition,
        "estimated_start": wait.estimated_start,
        "priority": wait.priority,
        "factors": dict(wait.factors),
        "advice": wait.advice,
        "suggested": wait.suggested,
        "note": wait.note,
        "estimate_learnt": wait.estimate_learnt,
    }
