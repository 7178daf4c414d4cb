"""notify(): who is told what, on which channels, and the rows that record it.

A user target is told on the personal channels they chose (events.default_on when they chose nothing); a course
target is its instructors and TAs. The course's webhook posts the events its instructor picked. Each delivery is a
Notification row under a unique key, so calling twice for one occurrence sends once; beyond NOTIFY_MAX_PER_HOUR
messages on one channel in an hour, further rows are kept as throttled and not sent.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from courses.models import TEACHING_ROLES, Course

from .events import PERSONAL_CHANNELS, Channel, Event, default_on
from .messages import Message, compose
from .models import CourseWebhook, Notification, Preference

SEND_EMAIL = "workers.notify.send_email"
SEND_WEBHOOK = "workers.notify.send_webhook"
WEBHOOK_QUEUE = "webhooks"  # a slow or dead webhook never holds up mail


def notify(target, event: str, *, job=None, context: dict | None = None) -> int:
    """Queue `event` for `target` (a user or a Course); how many deliveries were queued (0 when all were sent
    before, are switched off or throttled). The occurrence is the job (one message per job per event), or
    `context["key"]` (e.g. a budget period) when there is no job or one job may see the event more than once."""
    event = Event(event)
    context = dict(context or {})
    occurrence = context.get("key") or (job.pk if job is not None else None)
    if occurrence is None:
        raise ValueError("notify() needs job= or context['key'] to tell one occurrence from the next.")
    key = f"{event}:{occurrence}"[:200]
    message = compose(event, job, context)
    course = target if isinstance(target, Course) else getattr(job, "course", None) or context.get("course")
    people = list(_teachers(target)) if isinstance(target, Course) else [target]
    queued = sum(_to_person(person, event, key, message, job, course) for person in people)
    return queued + _to_webhook(course, event, key, message, job)


def _teachers(course: Course):
    return (
        get_user_model()
        .objects.filter(enrollments__course=course, enrollments__role__in=TEACHING_ROLES, is_active=True)
        .distinct()
    )


def wanted(user, event: str) -> set[str]:
    """The personal channels `user` wants `event` on."""
    chosen = dict(Preference.objects.filter(user=user, event=event).values_list("channel", "enabled"))
    return {c for c in PERSONAL_CHANNELS if chosen.get(c, default_on(event, c))}


def _to_person(user, event, key, message: Message, job, course) -> int:
    if not user.is_active:
        return 0
    channels = wanted(user, event)
    if not user.email:
        channels.discard(Channel.EMAIL)
    return sum(_record(channel, key, message, event, job, user=user, course=course) for channel in channels)


def _to_webhook(course, event, key, message: Message, job) -> int:
    if course is None:
        return 0
    hook = CourseWebhook.objects.filter(course=course, enabled=True).first()
    if hook is None or event not in hook.events:
        return 0
    return _record(Channel.WEBHOOK, key, message, event, job, user=None, course=course)


def _record(channel, key, message: Message, event, job, *, user, course) -> int:
    status = Notification.Status.THROTTLED if _over_limit(channel, user, course) else Notification.Status.QUEUED
    row = Notification(user=user, course=course, job=job, event=event, channel=channel, key=key, status=status)
    row.subject, row.text, row.url = message.subject[:200], message.text, message.url[:300]
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError:
        return 0  # told before
    if status != Notification.Status.QUEUED:
        return 0
    if channel == Channel.EMAIL:
        _send_on_commit(SEND_EMAIL, row.pk)
    elif channel == Channel.WEBHOOK:
        _send_on_commit(SEND_WEBHOOK, row.pk, queue=WEBHOOK_QUEUE)
    return 1  # browser rows wait for the person's open page to fetch them


def _over_limit(channel, user, course) -> bool:
    since = timezone.now() - timedelta(hours=1)
    counted = [Notification.Status.QUEUED, Notification.Status.SENT]
    recent = Notification.objects.filter(channel=channel, created_at__gte=since, status__in=counted)
    recent = recent.filter(user=user) if user is not None else recent.filter(user=None, course=course)
    return recent.count() >= settings.NOTIFY_MAX_PER_HOUR


def _send_on_commit(name: str, *args, queue: str | None = None) -> None:
    options: dict[str, Any] = {"queue": queue} if queue else {}
    transaction.on_commit(lambda: current_app.send_task(name, args=list(args), **options))
