"""The cluster side of lab sessions: holding their GPUs, checking the hold while they are on, and giving the GPUs
back (Celery task bodies). How a cluster holds them is its kind's (clusters/backends/lab_holds.py): a SLURM
reservation made at booking for the whole window, or on Kueue the course's ClusterQueue raised while the session is on.

Retry-safe: a hold is named after its session, and holding again finds what an earlier attempt made instead of making
a second. An unreachable cluster is retried (the task raises; the sweep asks again later), never a reason to refuse
the session. A SLURM reservation is for the identities the course's jobs run as on that cluster
(clusters/identity.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from clusters.backends import BackendError
from clusters.backends.lab_holds import HoldRequest, LabSessionHolds
from clusters.choices import RunAs
from clusters.kinds import kind_of
from clusters.models import AuthMethod, Cluster, ClusterAccount, ClusterIdentity
from core.enqueue import send_on_commit

from .lab_sessions import KEEP_HOLD, MAKE_RESERVATION, REMOVE_RESERVATION, holding_kinds, move, overlapping
from .models import LIVE_LAB_SESSION_STATES, Course, LabSession, LabSessionEvent, LabSessionState

logger = logging.getLogger(__name__)


def cluster_users(course: Course, cluster: Cluster) -> tuple[str, ...]:
    """The cluster usernames the course's jobs run as there, by the cluster's run_as mode."""
    members = course.enrollments.values("user_id")
    registered = ClusterAccount.objects.filter(cluster=cluster, user__in=members).exclude(
        auth_method=AuthMethod.VIA_SERVICE
    )
    names = set(registered.values_list("username", flat=True))
    if cluster.run_as == RunAs.SERVICE and cluster.uses_shared_user:  # every student's jobs as the shared user
        names |= {cluster.shared_user} if cluster.shared_user else set()
    elif cluster.run_as == RunAs.SERVICE:
        names |= set(cluster.accounts.filter(user__isnull=True).values_list("username", flat=True))
    elif cluster.run_as != RunAs.OWN_ACCOUNT:  # sudo, rest-user: each member's cluster username
        names |= set(ClusterIdentity.objects.filter(user__in=members).values_list("username", flat=True))
    return tuple(sorted(names))


def holds_of(session: LabSession) -> LabSessionHolds:
    return kind_of(session.cluster.kind).lab_session_holds(session.cluster)


def hold_request(session: LabSession, now: datetime) -> HoldRequest:
    """The session as its cluster's holder reads it, with the GPUs other courses' sessions take at the same time."""
    others = overlapping(session.cluster, session.starts_at, session.ends_at).exclude(course_id=session.course_id)
    return HoldRequest(
        name=session.reservation_name,
        course=session.course,
        starts_at=session.starts_at,
        ends_at=session.ends_at,
        gpus=session.gpus,
        now=now,
        users=cluster_users(session.course, session.cluster),
        others_gpus=sum(max(s.gpus, s.gpus_held) for s in others),
        held_before=session.gpus_held,
    )


def _session(session_id: int) -> LabSession | None:
    return LabSession.objects.select_related("course", "cluster").filter(pk=session_id).first()


def make(session_id: int) -> str:
    """Hold (or find held) the GPUs of a booked session and record what the cluster holds. BackendErrors that are
    worth retrying are raised for the task's retry."""
    session = _session(session_id)
    if session is None or session.state != LabSessionState.BOOKED:
        return "nothing"
    now = timezone.now()
    if session.ends_at <= now:
        return _close(session, LabSessionState.ENDED, "Its time passed before the cluster answered.")
    try:
        held = holds_of(session).hold(hold_request(session, now))
    except BackendError as exc:  # HoldRefused among them: the cluster's refusal, in words
        if exc.transient:
            raise
        return _close(session, LabSessionState.REFUSED, str(exc))
    if not move(
        session.pk,
        [LabSessionState.BOOKED],
        LabSessionState.HELD,
        message=held.words,
        gpus_held=held.gpus,
        nodes=held.where[:255],
    ):
        _release(session)  # cancelled while the cluster was asked: what was just made goes again
        return "cancelled"
    return "held"


def keep(session_id: int) -> str:
    """A held session on now, on a cluster that holds GPUs only while a session is on: hold them at its start, and
    after that check they are still held, putting them back where they were lost. Each change is an event."""
    now = timezone.now()
    with transaction.atomic():
        # The row is held across the cluster call, as a submit holds its job's across sbatch: a cancel waits for this
        # pass (or came first, and the pass does nothing), so a hold is never put back after the cancel gave it back.
        session = (
            LabSession.objects.select_for_update(of=("self",))
            .select_related("course", "cluster")
            .filter(pk=session_id)
            .first()
        )
        if session is None or session.state != LabSessionState.HELD or not session.starts_at <= now < session.ends_at:
            return "nothing"
        holds = holds_of(session)
        if not holds.applied_while_on:
            return "nothing"
        try:
            held = holds.hold(hold_request(session, now))
        except BackendError as exc:
            if exc.transient:
                raise
            message = f"At its start the cluster would not hold the session's GPUs: {exc}"
            move(session.pk, [LabSessionState.HELD], LabSessionState.REFUSED, message=message, removed_at=now)
            return "refused"
        if not held.changed:
            return "in place"
        LabSession.objects.filter(pk=session.pk).update(gpus_held=held.gpus, message=held.words[:500], updated_at=now)
        LabSessionEvent.objects.create(
            session=session, from_state=LabSessionState.HELD, to_state=LabSessionState.HELD, message=held.words[:500]
        )
        return "held"


def _close(session: LabSession, state: str, message: str) -> str:
    """A booking that will hold nothing: nothing on the cluster to remove either."""
    move(session.pk, [LabSessionState.BOOKED], state, message=message, removed_at=timezone.now())
    return str(state)


def remove(session_id: int) -> str:
    """Give back the GPUs of a cancelled or ended session (once: removed_at is set)."""
    session = _session(session_id)
    if session is None or session.state in LIVE_LAB_SESSION_STATES or session.removed_at is not None:
        return "nothing"
    _release(session)
    return "removed"


def _release(session: LabSession) -> None:
    """Give the session's GPUs back on the cluster, whatever was recorded; what that undid becomes an event."""
    words = holds_of(session).release(hold_request(session, timezone.now()))
    LabSession.objects.filter(pk=session.pk, removed_at=None).update(removed_at=timezone.now())
    if words:
        state = LabSession.objects.filter(pk=session.pk).values_list("state", flat=True).first() or session.state
        LabSessionEvent.objects.create(session=session, from_state=state, to_state=state, message=words[:500])


@dataclass
class SweepReport:
    ended: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)
    asked_again: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)


def sweep(now=None) -> SweepReport:
    """The beat's pass: sessions past their end are ended, the GPUs of ended and cancelled sessions given back (again
    where the cluster was down), bookings whose task was lost asked for again, and sessions on now whose cluster holds
    GPUs only while they are on checked (held at the start, put back where lost)."""
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
    on_now = LabSession.objects.filter(state=LabSessionState.HELD, starts_at__lte=now, ends_at__gt=now)
    for session_id in on_now.filter(cluster__kind__in=holding_kinds(applied_while_on=True)).values_list(
        "pk", flat=True
    ):
        send_on_commit(KEEP_HOLD, session_id)
        report.kept.append(session_id)
    return report
