"""The interface every cluster backend implements, and the errors it may raise.

The jobs app talks to clusters only through this module's types: it never imports paramiko or the
Kubernetes client. Messages on BackendError are written for the student who will read them.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusters.models import Cluster, ClusterAccount


class BackendError(Exception):
    """A failure the user should read; permanent unless a subclass says otherwise."""

    transient = False


class ClusterUnreachable(BackendError):
    """The cluster did not answer (network, daemon down). Worth retrying; never a reason to fail a job."""

    transient = True


class HostKeyNotPinned(BackendError):
    pass


class HostKeyMismatch(BackendError):
    pass


class AuthenticationFailed(BackendError):
    pass


class SubmitRejected(BackendError):
    """The scheduler refused the job; the message is the scheduler's own."""


class SchedulerUnavailable(ClusterUnreachable):
    """The login host answered but the scheduler did not (e.g. slurmctld down)."""


@dataclass(frozen=True)
class SubmitRequest:
    job_id: uuid.UUID
    script: str


@dataclass(frozen=True)
class SchedulerStatus:
    """What the scheduler says of one job; `state` is a jobs.states.JobState value."""

    scheduler_id: str
    state: str
    raw_state: str
    reason: str = ""
    exit_code: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


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
    has_accounting: bool | None = None


class ClusterBackend(ABC):
    """One cluster reached as one account. Instances are cheap; connections are pooled underneath."""

    kind: str

    def __init__(self, cluster: Cluster, account: ClusterAccount):
        self.cluster = cluster
        self.account = account

    @abstractmethod
    def submit(self, request: SubmitRequest) -> str:
        """Submit and return the scheduler's id. The portal's job id travels with the job."""

    @abstractmethod
    def find_submitted(self, job_id: uuid.UUID) -> str | None:
        """The scheduler id of an earlier submission of this portal job, if the scheduler knows one."""

    @abstractmethod
    def poll(self, scheduler_ids: list[str]) -> dict[str, SchedulerStatus]:
        """Statuses of many jobs in one scheduler call; ids the scheduler no longer knows are absent."""

    @abstractmethod
    def cancel(self, scheduler_id: str) -> None:
        """Ask the scheduler to stop the job; a job that already ended is not an error."""

    @abstractmethod
    def read_log(self, job_id: uuid.UUID, offset: int, limit: int) -> LogChunk:
        """Up to `limit` bytes of the job's output from `offset`."""

    @abstractmethod
    def test_connection(self) -> ConnectionReport:
        """Log in and ask the scheduler who it is; for the admin's Test connection."""

    @abstractmethod
    def stage_lab_files(self, source: Path) -> int:
        """Copy the bundled workloads into the cluster's lab directory; return the number of files copied."""
