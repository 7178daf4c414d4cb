"""Job state moves turned into notifications, in one place: the state machine's `job_moved` signal.

Started (→ running), finished (→ completed), failed (→ failed, timed out, lost, submit failed), stopped by the
course's rules (the portal's own cancel request: the term ended, the budget's grace passed, idle GPUs; the message is
the rule's reason) and cancelled by someone other than the owner (an instructor, an admin, or scancel outside the
portal). Each is one message per job per event (notify's key is the job).
"""

from __future__ import annotations

import logging

from django.dispatch import receiver

from core.choices import EventKind, JobState
from jobs.models import JobEvent
from jobs.signals import job_moved

from . import notify
from .events import Event

logger = logging.getLogger(__name__)
_FAILED = {JobState.FAILED, JobState.TIMED_OUT, JobState.LOST, JobState.SUBMIT_FAILED}


@receiver(job_moved, dispatch_uid="notifications.job_moved")
def on_job_moved(sender, job, from_state, to_state, actor=None, **kwargs) -> None:
    if job.in_array:  # a sweep's run: the sweep tells its end once (sweeps/endings.py)
        return
    try:
        event = _event_for(job, to_state, actor)
        if event is not None:
            notify(job.owner, event, job=job, context=_context(job, event, actor))
    except Exception:  # a message that cannot be queued must never stop a job's move
        logger.exception("notifications: could not queue the message for job %s", job.pk)


def _event_for(job, to_state: str, actor) -> Event | None:
    if to_state == JobState.RUNNING:
        return Event.STARTED
    if to_state == JobState.COMPLETED:
        return Event.FINISHED
    if to_state in _FAILED:
        return Event.FAILED
    if to_state != JobState.CANCELLED:
        return None
    request = _cancel_request(job)
    if actor is None and request is not None and request.actor_id is None:
        return Event.STOPPED_BY_RULE  # the portal asked (jobs/cancellation.py): a course rule, not a person
    asked_by = actor.pk if actor is not None else getattr(request, "actor_id", None)
    return None if asked_by == job.owner_id else Event.CANCELLED_BY_OTHER


def _cancel_request(job) -> JobEvent | None:
    return JobEvent.objects.filter(job_id=job.pk, kind=EventKind.CANCEL).select_related("actor").order_by("-pk").first()


def _context(job, event: Event, actor) -> dict:
    if event == Event.STOPPED_BY_RULE:
        request = _cancel_request(job)
        return {"text": request.message if request is not None else ""}
    if event != Event.CANCELLED_BY_OTHER:
        return {}
    request = _cancel_request(job)
    who = actor or (request.actor if request else None)
    by = f"by {who.get_full_name() or who.username}" if who else "by the portal or the cluster"
    why = f" ({request.message})" if request and request.message else ""
    return {"text": f"It was cancelled {by}{why}."}
