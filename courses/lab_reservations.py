"""The cluster side of lab sessions: making, removing and cleaning up their SLURM reservations (Celery task bodies).

Retry-safe: a reservation is named after its session, and making one first asks the cluster for that name, so a
retried or repeated task adopts the reservation an earlier attempt made instead of making a second. An unreachable
cluster is retried (the task raises; the sweep asks again later), never a reason to refuse the session. The
reservation is for the identities the course's jobs run as on that cluster (clusters/identity.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from django.utils import timezone

from clusters.backends import BackendError
from clusters.backends.reservations import ReservationRequest
from clusters.choices import RunAs
from clusters.kinds import get_backend
from clusters.models import AuthMethod, Cluster, ClusterAccount, ClusterIdentity
from core.enqueue import send_on_commit

from .lab_sessions import MAKE_RESERVATION, REMOVE_RESERVATION, move
from .models import LIVE_LAB_SESSION_STATES, Course, LabSession, LabSessionState

logger = logging.getLogger(__name__)


def cluster_users(course: Course, cluster: Cluster) -> tuple[str, ...]:
    """The cluster usernames the course's jobs run as there, by the cluster's run_as mode."""
    members = course.enrollments.values("user_id")
    registered = ClusterAccount.objects.filter(cluster=cluster, user__in=members).exclude(
        auth_method=AuthMethod.VIA_SERVICE
    )
    names = set(registered.values_list("username", flat=True))
    if cluster.run_as == RunAs.SERVICE:
        names |= set(cluster.accounts.filter(user__isnull=True).values_list("username", flat=True))
    elif cluster.run_as != RunAs.OWN_ACCOUNT:  # sudo, rest-user: each member's cluster username
        names |= set(ClusterIdentity.objects.filter(user__in=members).values_list("username", flat=True))
    return tuple(sorted(names))


def make(session_id: int) -> str:
    """Make (or find) the reservation of a booked session and record what the cluster holds. BackendErrors that are
    worth retrying are raised for the task's retry."""
    session = LabSession.objects.select_related("course", "cluster").filter(pk=session_id).first()
    if session is None or session.state != LabSessionState.BOOKED:
        return "nothing"
    now = timezone.now()
    if session.ends_at <= now:
        return _close(session, LabSessionState.ENDED, "Its time passed before the cluster answered.")
    users = cluster_users(session.course, session.cluster)
    if not users:
        return _close(
            session,
            LabSessionState.REFUSED,
            "Nobody in the course has a cluster user on this cluster yet, so there is no one to hold GPUs for.",
        )
    start = max(session.starts_at, now)
    request = ReservationRequest(
        name=session.reservation_name,
        starts_at=start,
        minutes=max(1, -(-int((session.ends_at - start).total_seconds()) // 60)),
        gpus=session.gpus,
        users=users,
    )
    backend = get_backend(session.cluster)
    try:
        held = backend.find_reservation(request.name) or backend.create_reservation(request)
    except BackendError as exc:  # ReservationRefused among them: SLURM's refusal, in words
        if exc.transient:
            raise
        return _close(session, LabSessionState.REFUSED, str(exc))
    where = f" on {held.nodes}" if held.nodes else ""
    message = f"The cluster holds {held.gpus} GPU(s){where} as reservation {held.name}."
    if not move(
        session.pk,
        [LabSessionState.BOOKED],
        LabSessionState.HELD,
        message=message,
        gpus_held=held.gpus,
        nodes=held.nodes[:255],
    ):
        remove(session.pk)  # cancelled while the cluster was asked: what was just made goes again
        return "cancelled"
    return "held"


def _close(session: LabSession, state: str, message: str) -> str:
    """A booking that will hold nothing: nothing on the cluster to remove either."""
    move(session.pk, [LabSessionState.BOOKED], state, message=message, removed_at=timezone.now())
    return str(state)


def remove(session_id: int) -> str:
    """Remove the reservation of a cancelled or ended session (once: removed_at is set)."""
    session = LabSession.objects.select_related("course", "cluster").filter(pk=session_id).first()
    if session is None or session.state in LIVE_LAB_SESSION_STATES or session.removed_at is not None:
        return "nothing"
    get_backend(session.cluster).delete_reservation(session.reservation_name)
    LabSession.objects.filter(pk=session.pk, removed_at=None).update(removed_at=timezone.now())
    return "removed"


@dataclass
class SweepReport:
    ended: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)
    asked_again: list[int] = field(default_factory=list)


def sweep(now=None) -> SweepReport:
    """The beat's pass: sessions past their end are ended, reservations of ended and cancelled sessions removed (again
    where the cluster was down), and bookings whose task was lost asked for again."""
    now = now or timezone.now()
    report = SweepReport()
    for session_id in LabSession.objects.filter(state=LabSessionState.HELD, ends_at__lte=now).values_list(
        "pk", flat=True
    ):
        if move(session_id, [LabSessionState.HELD], LabSessionState.ENDED, message="The session ended."):
            report.ended.append(session_id)
    stale = now - timedelta(minutes=1)
    leftover = LabSession.objects.filter(removed_at=None, updated_at__lt=stale)
    for session_id in leftover.filter(state__in=[LabSessionState.CANCELLED, LabSessionState.ENDED]).values_list(
        "pk", flat=True
    ):
        send_on_commit(REMOVE_RESERVATION, session_id)
        report.removing.append(session_id)
    for session_id in leftover.filter(state=LabSessionState.BOOKED).values_list("pk", flat=True):
        send_on_commit(MAKE_RESERVATION, session_id)
        report.asked_again.append(session_id)
    for session_id in report.ended:
        send_on_commit(REMOVE_RESERVATION, session_id)
    return report
