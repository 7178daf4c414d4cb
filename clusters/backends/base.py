"""The interface every cluster backend implements, and the errors it may raise (clusters/errors.py).

The jobs app talks to clusters only through this module's types: it never imports paramiko or the
Kubernetes client. Messages on BackendError are written for the student who will read them.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from clusters.errors import (  # handed on: every backend raises these
    AuthenticationFailed as AuthenticationFailed,
)
from clusters.errors import (
    BackendError as BackendError,
)
from clusters.errors import (
    ClusterUnreachable as ClusterUnreachable,
)
from clusters.errors import (
    HostKeyMismatch as HostKeyMismatch,
)
from clusters.errors import (
    HostKeyNotPinned as HostKeyNotPinned,
)
from clusters.errors import (
    NotSupported as NotSupported,
)
from clusters.errors import (
    PermissionDenied as PermissionDenied,
)
from clusters.errors import (
    SchedulerUnavailable as SchedulerUnavailable,
)
from clusters.errors import (
    SubmitRejected as SubmitRejected,
)
from clusters.limits import PartitionLimits as PartitionLimits

from .nodes import NodeInfo as NodeInfo
from .queue import QueuedJob as QueuedJob
from .queue import QueueSummary as QueueSummary
from .queue import QueueView as QueueView


@dataclass(frozen=True)
class QueueMilestone:
    """A step the cluster's queue took with a job (Kueue: a Workload condition that became true), with its reason in
    words for the student; `at` is when the queue says it happened, which keeps each step once."""

    condition: str
    reason: str
    words: str
    at: datetime


@dataclass(frozen=True)
class SubmitRequest:
    job_id: uuid.UUID
    script: str  # what the kind rendered: a batch script, objects as YAML documents
    # What the kind readies on the cluster before the submit (Kind.prepare_submit), as the kind's own data: jobs
    # passes it from the Kind to the backend without reading it.
    prepared: Any = None
    # The hold of the course's lab session on now, by name, where the kind's holds take jobs in (lab_holds.py).
    reservation: str = ""
    # An interactive session's secret, made by the portal (jobs/session_tokens.py): the kind hands it to the job
    # outside its script and its run directory, and never logs it.
    session_token: str = field(default="", repr=False)
    # A job array (a sweep, on a kind whose sweeps go as arrays): its tasks as the kind spells them (Kind.array_spec),
    # and the tasks' values file the kind writes beside the script (Kind.array_values: one line per task, data).
    array: str = ""
    task_values: str = ""


@dataclass(frozen=True)
class SchedulerStatus:
    """What the scheduler says of one job; `state` is a core.choices.JobState value."""

    scheduler_id: str
    state: str
    raw_state: str
    reason: str = ""
    exit_code: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    never_starts: str = ""  # pending for a reason that cannot clear by itself: why, in words for the student
    milestones: tuple[QueueMilestone, ...] = ()  # what the cluster's queue did with it so far (Kueue), oldest first
    # Why a job ended that did not complete, in words for its page, where the scheduler says more than a state and an
    # exit code can (a RayJob whose Ray cluster never came up); "" keeps the portal's own sentence.
    ending: str = ""


class Polled(dict):
    """poll()'s answer: scheduler id → SchedulerStatus, and whether the scheduler's controller itself gave it.

    A kind that can answer from a record kept beside the controller (an accounting store that answers while the
    controller is down) says so with from_controller=False and `note` in words for admins: the states
    are then what the controller last reported, so the cluster is not marked as heard from and pages keep saying
    that states may be out of date (jobs/staleness.py). A plain dict counts as the controller's answer.
    """

    def __init__(self, statuses=(), *, from_controller: bool = True, note: str = ""):
        super().__init__(statuses)
        self.from_controller, self.note = from_controller, note


def from_controller(statuses: dict) -> bool:
    return getattr(statuses, "from_controller", True)


@dataclass(frozen=True)
class LogChunk:
    offset: int  # where the next read starts
    data: str
    eof: bool  # nothing more to read right now
    exists: bool = True


@dataclass
class ConnectionReport:
    ok: bool
    lines: list[str] = field(default_factory=list)
    facts: dict[str, object] = field(default_factory=dict)  # what Test connection learnt: Cluster fields, kind settings


@dataclass(frozen=True)
class TaskUsage:
    """What one task of a running job uses now, as the cluster's metrics measure it (its processes summed): cpu in
    millicores, memory in bytes. `task` names it the way the cluster's other metrics do ("where/name")."""

    task: str
    job_id: str
    cpu_millis: float
    memory_bytes: int


@dataclass(frozen=True)
class NodeUsage:
    """What one node uses now, as the cluster's metrics measure it."""

    node: str
    cpu_millis: float
    memory_bytes: int


@dataclass(frozen=True)
class AccountedUsage:
    """One finished job as the cluster's accounting recorded it; None where accounting has no figure."""

    scheduler_id: str
    elapsed_seconds: int
    cpu_seconds: float  # user + system time of every step
    cpus: int
    gpus: int
    max_rss_bytes: int | None
    requested_memory_bytes: int | None
    time_limit_minutes: int | None


@dataclass(frozen=True)
class GpuAllocation:
    """Which GPU indexes of which node the scheduler gave a job."""

    scheduler_id: str
    node: str
    indexes: tuple[int, ...]
    cpus: str = ""  # the CPU ids, as the scheduler prints them


class ClusterBackend(ABC):
    """One cluster reached as one account. Instances are cheap; connections are pooled underneath."""

    kind: str
    # The Cluster fields this kind uses, as Django admin fieldsets; the cluster admin shows only these.
    admin_fieldsets: tuple[tuple[str, dict], ...] = ()
    # Whose identity jobs may run under (clusters.choices.RunAs values); the admin picks one per cluster.
    run_as_modes: tuple[str, ...] = ("service",)

    def __init__(self, cluster: Any, account: Any):  # a Cluster and ClusterAccount: the models stand on this module
        self.cluster = cluster
        self.account = account

    @abstractmethod
    def submit(self, request: SubmitRequest) -> str:
        """Submit and return the scheduler's id. The portal's job id travels with the job."""

    @abstractmethod
    def find_submitted(self, request: SubmitRequest) -> str | None:
        """The scheduler id of an earlier, complete submission of this portal job, if the scheduler knows one."""

    @abstractmethod
    def poll(self, scheduler_ids: list[str]) -> dict[str, SchedulerStatus]:
        """Statuses of many jobs in one scheduler call; ids the scheduler no longer knows are absent. A `Polled`
        answer may say it did not come from the scheduler's controller (then the cluster is not marked as heard)."""

    @abstractmethod
    def cancel(self, scheduler_id: str) -> SchedulerStatus | None:
        """Stop the job; a job that already ended is not an error. Returns the final status when it is known."""

    @abstractmethod
    def read_log(
        self, job_id: uuid.UUID, offset: int, limit: int, *, scheduler_id: str = "", stream: str = ""
    ) -> LogChunk:
        """Up to `limit` bytes of the job's output from `offset`; `stream` picks one of log_streams()."""

    def log_streams(self, scheduler_id: str) -> list[str]:
        """The job's separate outputs (one per task and process, where a cluster keeps them apart); empty when there is
        only one."""
        return []

    @abstractmethod
    def test_connection(self) -> ConnectionReport:
        """Log in and ask the scheduler who it is; for the admin's Test connection."""

    @abstractmethod
    def stage_lab_files(self, source: Path) -> int:
        """Copy the bundled workloads into the cluster's lab directory; return the number of files copied."""

    # A running job's own files and nodes (e.g. where a job's notebook server says it listens).
    def read_job_file(self, job_id: uuid.UUID, name: str, offset: int, limit: int) -> LogChunk:
        """Part of a file the job wrote in its run directory (a fixed name of the portal's), as the job's identity."""
        raise NotSupported(f"The portal cannot read the files of jobs on {self.cluster.display_name}.")

    def job_nodes(self, scheduler_id: str) -> list[str]:
        """The nodes a running job holds; empty when it holds none."""
        raise NotSupported(f"{self.cluster.display_name} does not say which nodes its jobs hold.")

    # Services a job serves (an inference server): scaled, sent requests, given helpers. Backends without them keep
    # these refusals.
    def scale(self, scheduler_id: str, replicas: int) -> str:
        raise NotSupported(f"Jobs on {self.cluster.display_name} cannot be scaled.")

    def proxy(self, scheduler_id: str, service: str, port: int, path: str, body: dict) -> Iterator[bytes]:
        raise NotSupported(f"Jobs on {self.cluster.display_name} have no service to send requests to.")

    def create_extra(self, scheduler_id: str, obj: dict) -> None:
        raise NotSupported(f"{self.cluster.display_name} cannot run helper objects.")

    # Usage measured by the cluster itself (the collector's "metrics-api" source): what clusters that do not
    # stream their nodes' GPUs over SSH give instead.
    def task_usage(self, scheduler_ids: list[str]) -> list[TaskUsage]:
        """CPU and memory in use by every task of these running jobs, in one call per part of the cluster they run
        in (not per job)."""
        raise NotSupported(f"{self.cluster.display_name} does not measure its jobs' tasks.")

    def node_usage(self) -> list[NodeUsage]:
        """Every node's CPU and memory in use, in one call, where the cluster measures it."""
        raise NotSupported(f"{self.cluster.display_name} does not measure its nodes.")

    # Telemetry: what the collector asks once per cycle per cluster.
    def nodes(self) -> list[NodeInfo]:
        raise NotSupported(f"{self.cluster.display_name} does not list its nodes.")

    def gpu_allocations(self) -> list[GpuAllocation]:
        raise NotSupported(f"{self.cluster.display_name} does not say which GPUs its jobs hold.")

    # Accounting: what finished jobs used, where the cluster records it.
    def usage(self, scheduler_ids: list[str]) -> dict[str, AccountedUsage]:
        """What accounting recorded of these finished jobs, in one call; empty where the cluster keeps no accounting
        (a job with no record is absent)."""
        return {}

    # The queue: why pending jobs wait, read once per poll cycle for every job (clusters/backends/queue.py).
    def queue(self) -> QueueView:
        """Every pending and running job the scheduler shows, with start estimates and priority factors where it has
        them, in a fixed number of calls whatever the number of jobs."""
        raise NotSupported(f"{self.cluster.display_name} does not say why jobs wait.")

    # Limits: what the scheduler could ever run, so that the portal refuses the rest at launch.
    def partition_limits(self) -> dict[str, PartitionLimits]:
        """Every partition's limits, in one call to the scheduler."""
        raise NotSupported(f"{self.cluster.display_name} has no partitions.")


def complete_utf8(raw: bytes) -> bytes:
    """Drop a multi-byte character cut at the end of a chunk; the next read starts with it whole."""
    for back in range(1, min(4, len(raw)) + 1):
        byte = raw[-back]
        if byte & 0b1100_0000 != 0b1000_0000:  # a lead byte or ASCII
            needed = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return raw if back >= needed else raw[:-back]
    return raw
