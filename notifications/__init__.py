"""Notifications: what the portal tells people about their jobs, by email, in the browser and through a course's
webhook. Other apps call one function:

    from notifications import notify
    notify(user_or_course, Event.BUDGET_80, job=job, context={"key": "week-47", "text": "…"})

Invariant: one Notification row per recipient, channel and occurrence (a unique key), written before anything is
sent; the sending is a Celery task queued after the commit, so a repeated call sends nothing twice.
"""


def notify(target, event: str, *, job=None, context: dict | None = None) -> int:
    """Tell `target` (a user, or a course: its instructors and its webhook) that `event` happened; how many
    deliveries were queued. See notifications/service.py."""
    from .service import notify as _notify

    return _notify(target, event, job=job, context=context)
