"""Mail tasks: invitations and password resets, sent through the SMTP relay outside any request.

A relay that cannot be reached or answers "try later" (4xx) is retried with backoff; a permanent refusal (5xx, a
refused recipient) is not, and is logged. The row is the record: a task whose invitation is gone, or whose person
has signed in meanwhile, does nothing.
"""

import logging
import smtplib
from contextlib import contextmanager

from celery import shared_task
from django.utils import timezone

from courses.models import Invitation
from passwords import mail

logger = logging.getLogger(__name__)
MAX_RETRIES = 8


@contextmanager
def retry_when_transient(task):
    try:
        yield
    except smtplib.SMTPRecipientsRefused as exc:
        if all(code >= 500 for code, _ in exc.recipients.values()):
            logger.warning("mail: the relay refused the recipient; not retried")
            return
        raise task.retry(exc=exc, countdown=min(900, 30 * 2**task.request.retries)) from exc
    except smtplib.SMTPResponseException as exc:
        if exc.smtp_code >= 500:
            logger.warning("mail: the relay refused the message (%s); not retried", exc.smtp_code)
            return
        raise task.retry(exc=exc, countdown=min(900, 30 * 2**task.request.retries)) from exc
    except OSError as exc:  # connection refused, timeouts, TLS failures, a dropped connection
        raise task.retry(exc=exc, countdown=min(900, 30 * 2**task.request.retries)) from exc


@shared_task(bind=True, max_retries=MAX_RETRIES)
def send_invitation(self, invitation_id: int) -> str:
    invitation = Invitation.objects.select_related("user", "course", "invited_by").filter(pk=invitation_id).first()
    if invitation is None:
        return "gone"
    if invitation.user.last_login is not None or not invitation.user.email:
        return "not needed"
    with retry_when_transient(self):
        mail.send_invitation(invitation.user, invitation.course, invitation.invited_by)
        Invitation.objects.filter(pk=invitation_id).update(sent_at=timezone.now())
    return "done"


@shared_task(bind=True, max_retries=MAX_RETRIES)
def send_password_reset(self, email: str) -> None:
    # Returns nothing: a task result must not tell whether the address exists.
    with retry_when_transient(self):
        mail.send_reset(email)
