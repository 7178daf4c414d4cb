"""Lab sessions as a cluster kind holds them: GPUs kept for one course over a window. An optional part of a kind.

A kind that can hold them names its holder class (`Kind.lab_holds`); courses/lab_reservations.py asks the holder only
through this interface: hold (make, or find what an earlier attempt made), and release at the end. What holding is
belongs to the kind: the SLURM kinds make a reservation for the window ahead
(clusters/backends/slurm_family/reservations.py); Kubernetes with Kueue raises the course's ClusterQueue quota while the
session is on (kubernetes/kueue_sessions.py).

Every call is retry-safe: a hold is named after its session, and holding again finds what is already held and
changes nothing. A refusal (HoldRefused) says in words why the cluster cannot hold the session and what to do; a
transient BackendError is retried by the task.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from clusters.errors import BackendError

if TYPE_CHECKING:
    from .base import ClusterBackend


class MakesBackends(Protocol):
    """What a holder needs of its kind (clusters/backends/kind.py's Kind): the cluster's backend. Named by what it
    does, so that this module, which the Kind names, does not name the Kind back."""

    def backend(self, cluster: Any, account: Any = None) -> ClusterBackend: ...


class HoldRefused(BackendError):
    """The cluster cannot hold this session; the message says why, in words for the instructor, and what to do."""


@dataclass(frozen=True)
class HoldRequest:
    """One lab session, as the cluster side needs it. The same request is built for every call about the session."""

    name: str  # the session's own name on the cluster (gpulab-<course>-<id>)
    course: Any  # the course row, read by its fields
    starts_at: datetime
    ends_at: datetime
    gpus: int
    now: datetime
    users: tuple[str, ...] = ()  # the cluster users the course's jobs run as there
    others_gpus: int = 0  # the GPUs other courses' sessions on this cluster hold in the same window
    held_before: int = 0  # the GPUs the portal recorded as held for this session last time (0: none yet)

    @property
    def on_now(self) -> bool:
        return self.starts_at <= self.now < self.ends_at


@dataclass(frozen=True)
class Held:
    """What the cluster holds for the session after a call."""

    gpus: int  # held now (0: nothing yet; the hold begins at the start)
    words: str  # what the cluster holds, in words for the session's page and its events
    where: str = ""  # the nodes held, where the hold is of whole nodes
    changed: bool = True  # this call changed what the cluster holds (False: it found it in place)


class LabSessionHolds:
    """One cluster's way of holding lab sessions. A subclass per kind; the defaults hold nothing."""

    # True: the hold exists only while the session is on, so the portal makes it at the start, checks while the session
    # runs that it is still in place, and undoes it at the end. False: made once ahead; the scheduler keeps the window.
    applied_while_on: ClassVar[bool] = False
    # The course's jobs must be sent into the hold by name (SubmitRequest.reservation), and those already waiting when
    # the session begins moved in. False: the course's jobs need nothing new to use the held GPUs.
    jobs_go_in: ClassVar[bool] = False
    # What the booking page says a session on {cluster} does, and what the session notice says of the course's jobs
    # while one is on: to teachers, and to students.
    booking_note: ClassVar[str] = (
        "During a session on {cluster} its GPUs are held for this course: your students' jobs there use them without "
        "doing anything new."
    )
    # What the cluster admin's "lab sessions" switch does on this kind, and what it needs of the cluster.
    admin_help: ClassVar[str] = "Instructors may book GPUs for a lab session."
    teacher_note: ClassVar[str] = "Your students' new jobs on {cluster} use the session's GPUs by themselves."
    student_note: ClassVar[str] = "Your jobs on {cluster} use the course's session GPUs: launch as usual."

    def __init__(self, kind: MakesBackends, cluster: Any):
        self.kind, self.cluster = kind, cluster

    @cached_property
    def backend(self) -> Any:
        """The cluster's backend, as its service account."""
        return self.kind.backend(self.cluster)

    def most_gpus(self) -> int | None:
        """The most GPUs one session can hold on the cluster, as the portal last heard, for the booking form; None
        where the cluster is asked when the session is held (a refusal then comes back in words)."""
        return None

    def booking_problem(self, course: Any) -> str:
        """Why no session of this course can be held on the cluster, known without asking it; "" when none."""
        return ""

    def hold(self, request: HoldRequest) -> Held:
        """Hold the session's GPUs, or find them already held. Before its start a kind that holds only while a
        session is on checks that they can be held then."""
        raise HoldRefused(f"{self.cluster.display_name} cannot hold GPUs for a lab session.")

    def release(self, request: HoldRequest) -> str:
        """Give the session's GPUs back; what was undone, in words ("" when there is nothing worth an event). A hold
        already gone (ended, removed by hand) is not an error."""
        return ""

    def move_jobs_in(self, request: HoldRequest, scheduler_ids: list[str]) -> list[str]:
        """Move these pending jobs into the hold (kinds whose jobs go in); the ids now waiting in it."""
        return []
