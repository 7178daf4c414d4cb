"""Job state moves turned into notifications, in one place: the state machine's `job_moved` signal.

Started (→ running), finished (→ completed), failed (→ failed, timed out, lost, submit failed) and cancelled by
someone other than the owner (an instructor, an admin, the portal at a term's end or a limit, or scancel outside
the portal). Each is one message per job per event (notify's key is the job).
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
    if to_state == JobState.CANCELLED and not _owner_asked(job, actor):
        return Event.CANCELLED_BY_OTHER
    return None


def _owner_asked(job, actor) -> bool:
    if actor is not None:
        return actor.pk == job.owner_id
    last = JobEvent.objects.filter(job_id=job.pk, kind=EventKind.CANCEL).order_by("-pk").first()
    return last is not None and last.actor_id == job.owner_id


def _context(job, event: Event, actor) -> dict:
    if event != Event.CANCELLED_BY_OTHER:
        return {}
    last = JobEvent.objects.filter(job_id=job.pk, kind=EventKind.CANCEL).select_related("actor").order_by("-pk")
    request = last.first()
    who = actor or (request.actor if request else None)
    by = f"by {who.get_full_name() or who.username}" if who else "by the portal or the cluster"
    why = f" ({request.message})" if request and request.message else ""
    return {"text": f"It was cancelled {by}{why}."}
