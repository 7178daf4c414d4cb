"""Sending one Notification row: by mail through the SMTP relay, or as a POST to the course's webhook. Called by
the Celery tasks in workers/notify.py, which retry what may pass.

Invariant: a row is sent only while it is queued, and marked sent once the relay or the webhook accepted it; a row
already sent, or gone, is left alone, so a repeated task sends nothing twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import requests
from django.conf import settings
from django.core.mail import EmailMessage
from django.utils import timezone

from .events import Event
from .models import Notification
from .unsubscribe import link
from .webhook_urls import UnsafeURL, check

if TYPE_CHECKING:
    from jobs.models import Job

logger = logging.getLogger(__name__)
LOG_TAIL_LINES = 20


class WebhookDown(Exception):
    """The webhook did not answer, or answered with an error worth trying again."""


def pending(notification_id: int) -> Notification | None:
    row = Notification.objects.select_related("user", "course", "job").filter(pk=notification_id).first()
    return row if row is not None and row.status == Notification.Status.QUEUED else None


def send_email(row: Notification) -> None:
    if row.user is None:  # only a course's webhook messages go to no user
        give_up(row, "An email needs its recipient.")
        return
    unsubscribe = link(row.user.pk, row.event)
    _add_details(row)
    body = f"{row.text}\n\n{row.url}\n\n-- \n"
    body += f"Stop these mails ({row.get_event_display()}): {unsubscribe}\n"
    body += f"Choose what the portal tells you: {settings.PORTAL_URL}/notifications/\n"
    headers = {"List-Unsubscribe": f"<{unsubscribe}>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}
    EmailMessage(f"[GPU Lab] {row.subject}", body, None, [row.user.email], headers=headers).send()
    mark_sent(row)


def post_webhook(row: Notification) -> None:
    hook = getattr(row.course, "webhook", None)
    if hook is None or not hook.enabled:
        give_up(row, "The course has no webhook any more.")
        return
    try:
        url = check(hook.url)
    except UnsafeURL as exc:
        give_up(row, str(exc))
        return
    _add_details(row)
    text = f"*{row.subject}*\n{row.text}\n{row.url}".strip()
    try:
        answer = requests.post(url, json={"text": text}, timeout=settings.NOTIFY_WEBHOOK_TIMEOUT, allow_redirects=False)
    except requests.RequestException as exc:
        raise WebhookDown(f"{type(exc).__name__}: {exc}"[:300]) from exc
    if answer.status_code >= 500 or answer.status_code == 429:
        raise WebhookDown(f"The webhook answered {answer.status_code}.")
    if answer.status_code >= 300:
        give_up(row, f"The webhook refused the message ({answer.status_code}); check its URL.")
        return
    mark_sent(row)


def mark_sent(row: Notification) -> None:
    Notification.objects.filter(pk=row.pk, status=Notification.Status.QUEUED).update(
        status=Notification.Status.SENT, sent_at=timezone.now(), tries=row.tries + 1, error=""
    )


def note_try(row: Notification, error: str) -> None:
    Notification.objects.filter(pk=row.pk).update(tries=row.tries + 1, error=error[:300])


def give_up(row: Notification, error: str) -> None:
    logger.warning("notifications: gave up on %s %s: %s", row.channel, row.pk, error)
    Notification.objects.filter(pk=row.pk, status=Notification.Status.QUEUED).update(
        status=Notification.Status.FAILED, tries=row.tries + 1, error=error[:300]
    )


def _add_details(row: Notification) -> None:
    """A failed job's last log lines, a finished job's right-size summary: read at the first try to send (never in
    the poll that saw the job end) and kept on the row, so a retry does not read them again."""
    if row.job is None or row.tries:
        return
    details: dict[str, Callable[[Job], str]] = {Event.FAILED: _log_tail, Event.FINISHED: _right_size}
    extra = details[row.event](row.job) if row.event in details else ""
    if extra:
        row.text += extra
        Notification.objects.filter(pk=row.pk).update(text=row.text)


def _right_size(job: Job) -> str:
    from jobs.rightsize import report_for

    report = report_for(job)
    if report is None or not report.lines:
        return ""
    lines = [f"- {line.resource}: asked {line.requested}, used {line.used}. {line.advice}" for line in report.lines]
    return "\n\nRequested against used:\n" + "\n".join(lines)


def _log_tail(job: Job) -> str:
    from jobs.logs import MAX_OFFSET, read_log

    try:
        end = read_log(job, MAX_OFFSET).offset
        data = read_log(job, max(0, end - 4096)).data
    except Exception as exc:  # any failure: the message goes out without the tail rather than not at all
        logger.info("notifications: no log tail for job %s: %s", job.pk, exc)
        return ""
    lines = data.splitlines()[-LOG_TAIL_LINES:]
    return "\n\nLast lines of the log:\n" + "\n".join(lines) if lines else ""
