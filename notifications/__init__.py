"""Notifications: what the portal tells people about their jobs, by email, in the browser and through a course's
webhook. Other apps call one function:

    from notifications import notify
    from notifications.events import Event

    notify(student, Event.IDLE_WARNING, job=job, context={"text": "GPU 0 below 5 % for 20 min. Keep it or cancel."})
    notify(student, Event.BUDGET_80, context={"key": f"{course.pk}:week-47", "course": course, "text": "…"})
    notify(course, Event.DIGEST, context={"key": "idle:2026112313", "text": "5 students idle"})

One message per job per event: a second warning for the same job needs a key of its own (context["key"], e.g. the
job id and when the warning began). context["text"] replaces the event's standard sentence where it has one;
context["course"] picks the course (its webhook, and the instructors' digest) when there is no job.

Invariant: one Notification row per recipient, channel and occurrence (a unique key), written before anything is
sent; the sending is a Celery task queued after the commit, so a repeated call sends nothing twice.
"""


def notify(target, event: str, *, job=None, context: dict | None = None) -> int:
    """Tell `target` (a user, or a course: its instructors and its webhook) that `event` happened; how many
    deliveries were queued. See notifications/service.py."""
    from .service import notify as _notify

    return _notify(target, event, job=job, context=context)
