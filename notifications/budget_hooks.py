"""Budget warnings (jobs.signals.budget_crossed) told to the student: at 80 % and 95 % of their GPU-hour budget and
when it is used up, each level its own event (so its own preference), one message per level and period (the signal's
key); top-ups (jobs.signals.budget_topped_up), one per top-up; and idle warnings (jobs.signals.idle_warned), one per
warning."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.dispatch import receiver
from django.urls import reverse

from jobs.signals import budget_crossed, budget_topped_up, idle_warned

from . import notify
from .events import BUDGET_EVENTS, Event

logger = logging.getLogger(__name__)


@receiver(budget_crossed, dispatch_uid="notifications.budget_crossed")
def on_budget_crossed(sender, course, student_id, level, text, key, **kwargs) -> None:
    _tell_student(course, student_id, BUDGET_EVENTS[level], text, key)


@receiver(budget_topped_up, dispatch_uid="notifications.budget_topped_up")
def on_budget_topped_up(sender, course, student_id, text, key, **kwargs) -> None:
    _tell_student(course, student_id, Event.BUDGET_TOP_UP, text, key)


def _tell_student(course, student_id, event: Event, text: str, key: str) -> None:
    student = get_user_model().objects.filter(pk=student_id, is_active=True).first()
    if student is None:
        return
    url = settings.PORTAL_URL + reverse("jobs:budget", args=[course.slug])
    try:
        notify(student, event, context={"key": key, "text": text, "course": course, "url": url})
    except Exception:  # a message that cannot be queued never stops the budget pass or the top-up
        logger.exception("notifications: could not queue the budget message for %s", key)


@receiver(idle_warned, dispatch_uid="notifications.idle_warned")
def on_idle_warned(sender, job, text, key, **kwargs) -> None:
    try:
        notify(job.owner, Event.IDLE_WARNING, job=job, context={"key": f"idle:{key}", "text": text})
    except Exception:  # a message that cannot be queued never stops the idle pass
        logger.exception("notifications: could not queue the idle warning of job %s", job.pk)
