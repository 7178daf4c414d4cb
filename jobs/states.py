"""The job state machine: which moves exist, and the one function that makes them.

The states and event kinds themselves are vocabulary (`core/choices.py`); this module owns the moves.

A move is a conditional UPDATE (… WHERE state = <from>) plus a JobEvent in one transaction, so a
duplicated or retried task finds the row already moved and changes nothing.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from core.choices import TERMINAL_STATES, EventKind, JobState

from .models import Job, JobEvent
from .signals import job_moved

_FINISHED_ON_SCHEDULER = {JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED, JobState.TIMED_OUT}

TRANSITIONS: dict[str, frozenset[str]] = {
    JobState.QUEUED: frozenset({JobState.SUBMITTING, JobState.CANCELLED, JobState.SUBMIT_FAILED}),
    JobState.SUBMITTING: frozenset(
        {JobState.PENDING, JobState.RUNNING, JobState.SUBMIT_FAILED, JobState.CANCELLED} | _FINISHED_ON_SCHEDULER
    ),
    JobState.PENDING: frozenset({JobState.RUNNING, JobState.LOST} | _FINISHED_ON_SCHEDULER),
    JobState.RUNNING: frozenset({JobState.PENDING, JobState.LOST} | _FINISHED_ON_SCHEDULER),  # requeued → pending
}


def can_move(from_state: str, to_state: str) -> bool:
    return to_state in TRANSITIONS.get(from_state, frozenset())


def transition(job, to_state: str, *, actor=None, message: str = "", **fields) -> bool:
    """Move `job` from the state it holds now to `to_state`; False (and no change) if someone moved it first.

    `fields` are written in the same UPDATE (scheduler_id, exit_code, error, …). On success the instance is
    updated to match the row.
    """
    from_state = job.state
    if not can_move(from_state, to_state):
        return False
    now = timezone.now()
    fields["updated_at"] = now
    if to_state == JobState.RUNNING and not job.started_at:
        fields.setdefault("started_at", now)
    if to_state in {JobState.PENDING, JobState.RUNNING} and from_state == JobState.SUBMITTING:
        fields.setdefault("submitted_at", now)
    if to_state in TERMINAL_STATES:
        fields["finished_at"] = fields.get("finished_at") or now
    _keep_times_ordered(job, fields)
    with transaction.atomic():
        moved = Job.objects.filter(pk=job.pk, state=from_state).update(state=to_state, **fields)
        if not moved:
            return False
        JobEvent.objects.create(
            job_id=job.pk,
            actor=actor,
            kind=EventKind.STATE,
            from_state=from_state,
            to_state=to_state,
            message=message[:2000],
        )
    job.state = to_state
    for name, value in fields.items():
        setattr(job, name, value)
    job_moved.send(sender=Job, job=job, from_state=from_state, to_state=to_state, actor=actor)
    return True


def _keep_times_ordered(job, fields: dict) -> None:
    """submitted_at <= started_at <= finished_at, though the portal's clock sets the first and the scheduler's
    (another machine, and a job that starts at once starts before sbatch has returned) the others: a later
    time that comes out earlier is raised to the one before it."""
    floor = None
    for name in ("submitted_at", "started_at", "finished_at"):
        value = fields[name] if name in fields else getattr(job, name)
        if value is not None and floor is not None and value < floor:
            fields[name] = value = floor
        floor = value if value is not None else floor


def record(job, kind: str, message: str, *, actor=None) -> None:
    """An event that is not a move: a launch, a cancel request, a retry note."""
    record_many([job], kind, message, actor=actor)


def record_many(jobs, kind: str, message: str, *, actor=None) -> int:
    """The same event on several jobs' timelines (a budget notice on each of a student's jobs), in one insert."""
    rows = [JobEvent(job_id=j.pk, actor=actor, kind=kind, from_state=j.state, message=message[:2000]) for j in jobs]
    return len(JobEvent.objects.bulk_create(rows))
