"""Notification tasks: a mail, or a post to a course's webhook, for one Notification row.

Webhooks run on their own queue with a short timeout and a bounded number of retries, then give up: a dead chat
server never delays mail or anything else. Both take the row's id and do nothing when it is gone or already sent.
"""

import logging

from celery import shared_task
from django.conf import settings

from notifications import delivery, reminders
from notifications.service import SEND_EMAIL, SEND_WEBHOOK, WEBHOOK_QUEUE

from .mail import MAX_RETRIES, Refused, retry_when_transient

logger = logging.getLogger(__name__)


@shared_task(name=SEND_EMAIL, bind=True, max_retries=MAX_RETRIES)
def send_email(self, notification_id: int) -> str:
    row = delivery.pending(notification_id)
    if row is None:
        return "not needed"
    try:
        with retry_when_transient(self):
            delivery.send_email(row)
    except Refused as exc:
        delivery.give_up(row, str(exc))
        return "refused"
    return "sent"


@shared_task(name=SEND_WEBHOOK, bind=True, max_retries=None)
def send_webhook(self, notification_id: int) -> str:
    row = delivery.pending(notification_id)
    if row is None:
        return "not needed"
    try:
        delivery.post_webhook(row)
    except delivery.WebhookDown as exc:
        if self.request.retries >= settings.NOTIFY_WEBHOOK_RETRIES:
            delivery.give_up(row, f"Gave up after {self.request.retries + 1} tries: {exc}")
            return "gave up"
        delivery.note_try(row, str(exc))
        delay = settings.NOTIFY_WEBHOOK_RETRY_DELAY * 2**self.request.retries
        raise self.retry(countdown=delay, queue=WEBHOOK_QUEUE) from exc
    return "sent"


@shared_task
def send_reminders() -> dict:
    """The beat task: ten minutes before each running job's time limit, and the instructors' hourly idle digest."""
    return {"time_limit": reminders.time_limit_soon(), "digests": reminders.idle_digest()}
