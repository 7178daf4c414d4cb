"""SLURM reservations for lab sessions, as both SLURM kinds' command line builds and reads them.

A lab session holds GPUs for a course's users from a start for a number of minutes. Where the cluster's SLURM can
reserve GPUs as TRES (the release table below), the reservation asks for `TRES=gres/gpu=N`; elsewhere it holds the
whole nodes that carry the GPUs (`Nodes=`), and the session holds every GPU on them. Commands are argument lists
from a fixed vocabulary (`scontrol create|show|delete reservation`); the only values in them are the portal's own
reservation name, validated numbers, node names SLURM printed and POSIX user names (clusters/identity.py).

`SlurmReservations` is how both SLURM kinds hold a lab session (clusters/backends/lab_holds.py): the reservation is
made when the session is booked, for its whole window, and the course's jobs are submitted into it by name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ..lab_holds import Held, HoldRefused, HoldRequest, LabSessionHolds
from ..nodes import NodeInfo

NAME = re.compile(r"^gpulab-[a-z0-9-]{1,48}$")
USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
NODE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_VERSION = re.compile(r"(\d+)\.(\d+)")
# States in which a node takes no new work: a reservation on it would hold nothing.
_UNUSABLE = re.compile(r"DOWN|DRAIN|FAIL|NOT_RESPONDING|FUTURE|POWER", re.IGNORECASE)


@dataclass(frozen=True)
class SlurmRelease:
    """What one SLURM release can do that another cannot, for the portal's purposes."""

    since: tuple[int, int]  # (major, minor): this row holds from this release on, until the next newer row
    reserves_gpus_as_tres: bool  # `scontrol create reservation TRES=gres/gpu=N`


# Newest first. 22.05 checked here ("TRES type 'gres/gpu' not supported with reservations"); GRES in reservations
# came with 23.02 (SchedMD's release notes).
RELEASES = (
    SlurmRelease((23, 2), reserves_gpus_as_tres=True),
    SlurmRelease((0, 0), reserves_gpus_as_tres=False),
)


def release(version_text: str) -> SlurmRelease:
    """The row for `scontrol --version`'s answer ("slurm-wlm 22.05.8", "slurm 23.11.4"); the oldest when unreadable."""
    found = _VERSION.search(version_text or "")
    version = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
    return next(row for row in RELEASES if version >= row.since)


class ReservationRefused(HoldRefused):
    """SLURM (or the cluster's nodes) cannot hold this session; the message says why in words, and what to do."""


@dataclass(frozen=True)
class ReservationRequest:
    name: str
    starts_at: datetime
    minutes: int
    gpus: int
    users: tuple[str, ...]


@dataclass(frozen=True)
class HeldReservation:
    """A reservation as SLURM lists it: its nodes ("" when it holds TRES alone) and the GPUs it holds."""

    name: str
    nodes: str
    gpus: int


def check(request: ReservationRequest) -> None:
    """Refuse what no command may carry (the forms refuse these before; this is the last gate before SSH)."""
    checked_name(request.name)
    bad_users = [u for u in request.users if not USER.match(u)]
    if bad_users or not request.users or request.gpus < 1 or request.minutes < 1:
        raise ReservationRefused(f"The reservation {request.name!r} cannot be made from these values.")


def nodes_for(nodes: list[NodeInfo], gpus: int) -> list[NodeInfo]:
    """The fewest usable GPU nodes that together carry `gpus` GPUs, biggest first; refused when there are too few."""
    usable = sorted(
        (n for n in nodes if n.gpus > 0 and NODE.match(n.name) and not _UNUSABLE.search(n.state)),
        key=lambda n: (-n.gpus, n.name),
    )
    chosen: list[NodeInfo] = []
    for node in usable:
        if sum(n.gpus for n in chosen) >= gpus:
            break
        chosen.append(node)
    held = sum(n.gpus for n in chosen)
    if held < gpus:
        raise ReservationRefused(
            f"The cluster has {held} GPU(s) on nodes that are up; the session asks for {gpus}. Book fewer GPUs."
        )
    return chosen


def create_argv(request: ReservationRequest, *, now: datetime, nodes: list[NodeInfo] | None) -> list[str]:
    """`scontrol create reservation`: nodes given, the whole nodes; None, the GPUs as TRES. The start is relative
    ("now+N seconds"), so the cluster's time zone never shifts it. Jobs already running on the nodes keep running
    (IGNORE_JOBS); no new job but the session's starts there until it ends."""
    check(request)
    seconds = max(0, int((request.starts_at - now).total_seconds()))
    argv = [
        "scontrol",
        "create",
        "reservation",
        f"ReservationName={request.name}",
        f"StartTime=now+{seconds}seconds" if seconds else "StartTime=now",
        f"Duration={request.minutes}",
        f"Users={','.join(request.users)}",
        "Flags=IGNORE_JOBS",
    ]
    argv.append(f"Nodes={','.join(n.name for n in nodes)}" if nodes is not None else f"TRES=gres/gpu={request.gpus}")
    return argv


def checked_name(name: str) -> str:
    """The name, if it is one the portal gives its reservations (gpulab-…); else refused."""
    if not NAME.match(name):
        raise ReservationRefused(f"{name[:60]!r} is not a lab session's reservation.")
    return name


def show_argv(name: str) -> list[str]:
    return ["scontrol", "show", "reservation", "--oneliner", checked_name(name)]


def delete_argv(name: str) -> list[str]:
    return ["scontrol", "delete", "reservation", checked_name(name)]


def pending_argv(name: str) -> list[str]:
    """The jobs still waiting in the reservation: removing it would hold them for good (RESV_DEL_HOLD)."""
    return ["squeue", "--noheader", "--states=PENDING", f"--reservation={checked_name(name)}", "--format=%i"]


def join_argv(job_ids: list[str], name: str) -> list[str]:
    """Those waiting jobs into the reservation (an operator may move any user's job). SLURM moves every job it can and
    fails the call for the rest, so what moved is read back with pending_argv."""
    return ["scontrol", "update", f"JobId={','.join(job_ids)}", f"Reservation={checked_name(name)}"]


def leave_argv(job_ids: list[str]) -> list[str]:
    """Those jobs out of the reservation: they wait for the cluster's GPUs like any other job."""
    return ["scontrol", "update", f"JobId={','.join(job_ids)}", "Reservation="]


# A reservation SLURM removed itself (at its end) leaves the jobs that still waited in it held, with this reason.
HELD_ARGV = ["squeue", "--noheader", "--states=RESV_DEL_HOLD", "--format=%i|%r"]


def held_for(text: str, name: str) -> list[str]:
    """The jobs HELD_ARGV lists as held because reservation `name` was deleted."""
    reason = f"Reservation {checked_name(name)} was deleted"
    return [i for i, _, why in (line.partition("|") for line in text.splitlines()) if i.isdigit() and reason in why]


def release_argv(job_ids: list[str]) -> list[str]:
    return ["scontrol", "release", ",".join(job_ids)]


def end_now_argv(name: str) -> list[str]:
    """SLURM will not delete a reservation its jobs still use ("Requested reservation is in use"): it is ended now
    instead, so it holds nothing more, and SLURM drops it once those jobs are gone (they run on to their limit)."""
    return ["scontrol", "update", f"ReservationName={checked_name(name)}", "EndTime=now"]


def parse_show(text: str, gpus_of_nodes: Callable[[str], int]) -> HeldReservation | None:
    """`scontrol show reservation --oneliner NAME`; `gpus_of_nodes` counts the GPUs on a SLURM host list."""
    fields = dict(re.findall(r"(\w+)=(\S*)", text))
    if "ReservationName" not in fields:
        return None
    nodes = fields.get("Nodes", "")
    nodes = "" if nodes in {"", "(null)"} else nodes
    tres_gpus = re.search(r"gres/gpu=(\d+)", fields.get("TRES", ""))
    held = int(tres_gpus.group(1)) if tres_gpus else gpus_of_nodes(nodes) if nodes else 0
    return HeldReservation(name=fields["ReservationName"], nodes=nodes, gpus=held)


# SLURM's refusals, in words for the instructor who booked: (what SLURM says, what the portal says).
REFUSALS = (
    (
        re.compile(r"overlaps with another reservation", re.I),
        "Another reservation on the cluster holds those nodes at that time. Pick another time, or ask the cluster's "
        "admins which sessions are booked.",
    ),
    (
        re.compile(r"Invalid user id|Access.*denied|permission denied|not authorized", re.I),
        "The cluster will not let the portal's account make reservations: an admin must make it a SLURM operator "
        "(sacctmgr modify user NAME set adminlevel=operator).",
    ),
    (re.compile(r"Invalid user|Invalid.*users", re.I), "The cluster does not know one of the course's cluster users."),
    (re.compile(r"Invalid time|invalid start", re.I), "The cluster refused the start time; book a time in the future."),
    (re.compile(r"nodes are busy|Requested nodes", re.I), "The cluster's GPU nodes are not free for that time."),
    (re.compile(r"not supported with reservations", re.I), "This cluster's SLURM cannot reserve GPUs as such."),
)


def refusal(message: str) -> str:
    """SLURM's answer to a create, in words, with SLURM's own line after them."""
    said = message.strip().splitlines()[-1] if message.strip() else "no answer"
    words = next((text for pattern, text in REFUSALS if pattern.search(message)), "SLURM refused the reservation.")
    return f"{words} (SLURM: {said[:300]})"


class SlurmReservations(LabSessionHolds):
    """A lab session as a SLURM reservation for the identities the course's jobs run as, made at booking for the
    session's window; the backend's scontrol vocabulary above does the work."""

    jobs_go_in = True
    admin_help = (
        "Instructors may book GPUs for a lab session: the portal makes a reservation for the course's users. The "
        "service account must be a SLURM operator (sacctmgr modify user NAME set adminlevel=operator); students' "
        "jobs never run as it, so their scripts cannot make reservations."
    )
    booking_note = (
        "During a session on {cluster} the GPUs are held for this course alone: your students' jobs there go into the "
        "reservation without them doing anything, and other courses' jobs wait. Where SLURM cannot reserve single "
        "GPUs, the whole nodes that hold them are reserved."
    )
    teacher_note = "Your students' new jobs on {cluster} go into the reservation by themselves."
    student_note = "Your jobs on {cluster} go into the course's reserved GPUs: launch as usual."

    def most_gpus(self) -> int:
        """The largest partition's GPUs, as the scheduler last reported them (0: not known yet)."""
        partitions = (self.cluster.partition_limits or {}).values()
        return max((p.get("nodes", 0) * p.get("gpus_per_node", 0) for p in partitions), default=0)

    def hold(self, request: HoldRequest) -> Held:
        if not request.users:
            raise HoldRefused(
                "Nobody in the course has a cluster user on this cluster yet, so there is no one to hold GPUs for."
            )
        start = max(request.starts_at, request.now)
        wanted = ReservationRequest(
            name=request.name,
            starts_at=start,
            minutes=max(1, -(-int((request.ends_at - start).total_seconds()) // 60)),
            gpus=request.gpus,
            users=request.users,
        )
        held = self.backend.find_reservation(wanted.name) or self.backend.create_reservation(wanted)
        where = f" on {held.nodes}" if held.nodes else ""
        words = f"The cluster holds {held.gpus} GPU(s){where} as reservation {held.name}."
        return Held(gpus=held.gpus, words=words, where=held.nodes)

    def release(self, request: HoldRequest) -> str:
        self.backend.delete_reservation(request.name)
        return ""

    def move_jobs_in(self, request: HoldRequest, scheduler_ids: list[str]) -> list[str]:
        return self.backend.move_into_reservation(request.name, scheduler_ids)
