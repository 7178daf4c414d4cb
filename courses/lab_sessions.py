"""Lab sessions: GPUs an instructor books on one of the course's clusters for a live lab.

A booking is a LabSession row; the row is the record. Its moves (booked → held | refused, booked | held →
cancelled | ended, held → refused where the cluster holds GPUs only from the start and then will not) are conditional
updates, each with a LabSessionEvent. The cluster side (holding the GPUs and giving them back, the way the cluster's
kind does: clusters/backends/lab_holds.py) runs in Celery tasks, courses/lab_reservations.py. While a held session is
on, the course's jobs on that cluster are submitted into its hold where the kind's holds take jobs in (a SLURM
reservation: jobs/submission.py asks `reservation_for`).

Refused bookings: a start in the past or too far ahead, too short or too long, more GPUs than the cluster has,
a second session of the course at the same time, or more GPUs than other courses' sessions leave free then; what the
kind knows without asking the cluster (a course queue it does not manage). What only the cluster can say comes back
from it as a refusal in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from clusters import kinds
from clusters.models import Cluster
from core.enqueue import send_on_commit

from .models import LIVE_LAB_SESSION_STATES, Course, LabSession, LabSessionEvent, LabSessionState

MAKE_RESERVATION = "workers.tasks.make_lab_reservation"
REMOVE_RESERVATION = "workers.tasks.remove_lab_reservation"
KEEP_HOLD = "workers.tasks.keep_lab_session_held"
# Starts are booked by the minute (the form's time field): a start's minute counts as now until this long after it
# ended, so the current minute, sent a little later, still books a session that starts now.
PAST_GRACE = timedelta(minutes=1)
MINUTE = timedelta(minutes=1)


class BookingRefused(Exception):
    """The booking cannot be made; `errors` maps each form field (or "__all__") to what to do."""

    def __init__(self, errors: dict[str, str]):
        super().__init__(" ".join(errors.values()))
        self.errors = errors


@dataclass(frozen=True)
class Booking:
    cluster: Cluster
    starts_at: datetime
    minutes: int
    gpus: int

    @property
    def ends_at(self) -> datetime:
        return self.starts_at + timedelta(minutes=self.minutes)


def holding_kinds(**flags: bool) -> list[str]:
    """The kinds whose clusters can hold lab sessions, with the holder's flags as given (e.g. jobs_go_in=True)."""
    return [
        name
        for name in kinds.KINDS
        if (holder := kinds.kind_of(name).lab_holds) is not None
        and all(getattr(holder, flag) == wanted for flag, wanted in flags.items())
    ]


def lab_clusters(course: Course) -> QuerySet[Cluster]:
    """The course's clusters on which its admin allows lab sessions and whose kind can hold them."""
    return course.clusters.filter(enabled=True, lab_reservations=True, kind__in=holding_kinds()).order_by("name")


def booking_notes(course: Course) -> list[str]:
    """What a session does on each of the course's lab clusters, as the booking page says it."""
    notes = []
    for cluster in lab_clusters(course):
        holds = kinds.kind_of(cluster.kind).lab_holds
        notes.append(holds.booking_note.format(cluster=cluster.display_name) if holds else "")
    return [note for note in notes if note]


def _when(moment: datetime) -> str:
    return timezone.localtime(moment).strftime("%a %d %b %H:%M")


def _has_passed(starts_at: datetime, now: datetime) -> bool:
    return starts_at.replace(second=0, microsecond=0) + MINUTE + PAST_GRACE <= now


def overlapping(cluster: Cluster, starts_at: datetime, ends_at: datetime) -> QuerySet[LabSession]:
    return LabSession.objects.filter(
        cluster=cluster, state__in=LIVE_LAB_SESSION_STATES, starts_at__lt=ends_at, ends_at__gt=starts_at
    )


def booking_errors(course: Course, booking: Booking, now: datetime | None = None) -> dict[str, str]:
    """Why this booking cannot be made, by form field; empty when it can."""
    now = now or timezone.now()
    errors: dict[str, str] = {}
    if not lab_clusters(course).filter(pk=booking.cluster.pk).exists():
        errors["cluster"] = "Lab sessions cannot be booked on that cluster: an admin must allow them on it first."
        return errors
    if _has_passed(booking.starts_at, now):
        errors["starts_at"] = f"That time has passed ({_when(booking.starts_at)}). Book a start from now on."
    elif booking.starts_at > now + timedelta(days=settings.GPULAB_LAB_SESSION_MAX_DAYS_AHEAD):
        errors["starts_at"] = f"Book at most {settings.GPULAB_LAB_SESSION_MAX_DAYS_AHEAD} days ahead."
    low, high = settings.GPULAB_LAB_SESSION_MIN_MINUTES, settings.GPULAB_LAB_SESSION_MAX_MINUTES
    if not low <= booking.minutes <= high:
        errors["minutes"] = f"A session lasts from {low} to {high} minutes; split a longer lab into two sessions."
    holds = kinds.kind_of(booking.cluster.kind).lab_session_holds(booking.cluster)
    total = holds.most_gpus()  # None: the cluster says when it is asked to hold the session
    if booking.gpus < 1:
        errors["gpus"] = "Book at least one GPU."
    elif total == 0:
        errors["gpus"] = (
            f"The portal does not know yet how many GPUs “{booking.cluster.display_name}” has. Ask an admin to run "
            "Test connection on it, or try again in a few minutes."
        )
    elif total is not None and booking.gpus > total:
        errors["gpus"] = f"“{booking.cluster.display_name}” has {total} GPU(s); book at most {total}."
    problem = holds.booking_problem(course)
    if problem:
        errors["cluster"] = problem
    if errors:
        return errors
    others = list(overlapping(booking.cluster, booking.starts_at, booking.ends_at))
    mine = next((s for s in others if s.course_id == course.pk), None)
    if mine:
        errors["starts_at"] = (
            f"The course already has a session from {_when(mine.starts_at)} to {_when(mine.ends_at)}. "
            "Cancel it or book another time."
        )
        return errors
    taken = sum(max(s.gpus, s.gpus_held) for s in others)
    if total is not None and taken + booking.gpus > total:
        free = max(total - taken, 0)
        errors["gpus"] = (
            f"Other courses' sessions hold {taken} of the cluster's {total} GPUs at that time"
            f" ({_when(min(s.starts_at for s in others))} to {_when(max(s.ends_at for s in others))}). "
            + (f"Book at most {free}, or another time." if free else "Book another time.")
        )
    return errors


def book(course: Course, booking: Booking, *, actor) -> LabSession:
    """Record the booking and ask the workers to hold its GPUs; BookingRefused says what is wrong."""
    with transaction.atomic():
        Cluster.objects.select_for_update().filter(pk=booking.cluster.pk).first()  # one booking check at a time
        errors = booking_errors(course, booking)
        if errors:
            raise BookingRefused(errors)
        session = LabSession.objects.create(
            course=course,
            cluster=booking.cluster,
            starts_at=booking.starts_at,
            ends_at=booking.ends_at,
            gpus=booking.gpus,
            booked_by=actor,
        )
        LabSessionEvent.objects.create(
            session=session,
            actor=actor,
            to_state=LabSessionState.BOOKED,
            message=f"Booked {booking.gpus} GPU(s) on {booking.cluster.display_name}.",
        )
        send_on_commit(MAKE_RESERVATION, session.pk)
    return session


def cancel(session: LabSession, *, actor) -> bool:
    """Cancel a booked or held session; the workers give its GPUs back. False: it had already ended."""
    moved = move(session.pk, LIVE_LAB_SESSION_STATES, LabSessionState.CANCELLED, actor=actor, message="Cancelled.")
    if moved:
        send_on_commit(REMOVE_RESERVATION, session.pk)
    return moved


def move(session_id: int, from_states, to: str, *, actor=None, message: str = "", **fields) -> bool:
    """The one way a session changes state: conditional on where it is, with its audit event."""
    with transaction.atomic():
        current = LabSession.objects.filter(pk=session_id, state__in=from_states).values_list("state", flat=True)
        was = current.select_for_update().first()
        if was is None:
            return False
        LabSession.objects.filter(pk=session_id).update(
            state=to, message=message[:500], updated_at=timezone.now(), **fields
        )
        LabSessionEvent.objects.create(
            session_id=session_id, actor=actor, from_state=was, to_state=to, message=message[:500]
        )
    return True


def reservation_for(course_id: int, cluster_id: int, now: datetime | None = None) -> str:
    """The hold a job of this course on this cluster goes into now (a SLURM reservation), or ""."""
    now = now or timezone.now()
    session = (
        LabSession.objects.select_related("course")
        .filter(course_id=course_id, cluster_id=cluster_id, state=LabSessionState.HELD)
        .filter(cluster__kind__in=holding_kinds(jobs_go_in=True))
        .filter(starts_at__lte=now, ends_at__gt=now)
        .first()
    )
    return session.reservation_name if session else ""


def coming_sessions(now: datetime | None = None) -> QuerySet[LabSession]:
    """Sessions on now or still to come, soonest first (a course's first is the one its pages show)."""
    live = LabSession.objects.filter(state__in=LIVE_LAB_SESSION_STATES, ends_at__gt=now or timezone.now())
    return live.select_related("cluster").order_by("starts_at")


def current_or_next(course: Course, now: datetime | None = None) -> LabSession | None:
    """The course's session on now, else its next booked one (for the dashboard and the students' notice)."""
    return coming_sessions(now).filter(course=course).first()
