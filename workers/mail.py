"""Mail tasks: invitations, password resets and course-term notices, sent through the SMTP relay outside any
request.

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
from jobs import term_end
from passwords import mail

logger = logging.getLogger(__name__)
MAX_RETRIES = 8


class Refused(Exception):
    """The relay refused the mail for good; the message is its answer."""


def _answer(code: int, text: bytes | str) -> str:
    text = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
    return f"{code} {text}"[:300]


@contextmanager
def retry_when_transient(task):
    """Retry what may pass (no connection, 4xx); raise Refused for what will not (5xx, a refused recipient)."""
    try:
        yield
    except smtplib.SMTPRecipientsRefused as exc:
        if all(code >= 500 for code, _ in exc.recipients.values()):
            raise Refused("; ".join(_answer(code, text) for code, text in exc.recipients.values())) from exc
        raise task.retry(exc=exc, countdown=min(900, 30 * 2**task.request.retries)) from exc
    except smtplib.SMTPResponseException as exc:
        if exc.smtp_code >= 500:
            raise Refused(_answer(exc.smtp_code, exc.smtp_error)) from exc
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
    try:
        with retry_when_transient(self):
            mail.send_invitation(invitation.user, invitation.course, invitation.invited_by)
    except Refused as exc:
        logger.warning("mail: the relay refused the invitation %s: %s", invitation_id, exc)
        Invitation.objects.filter(pk=invitation_id).update(refused=str(exc))  # the roster page shows it
        return "refused"
    Invitation.objects.filter(pk=invitation_id).update(sent_at=timezone.now(), refused="")
    return "done"


@shared_task(bind=True, max_retries=MAX_RETRIES)
def send_password_reset(self, email: str) -> None:
    # Returns nothing: a task result must not tell whether the address exists.
    try:
        with retry_when_transient(self):
            mail.send_reset(email)
    except Refused as exc:
        logger.warning("mail: the relay refused a password reset: %s", exc)


@shared_task(bind=True, max_retries=MAX_RETRIES)
def send_term_notice(self, notice_id: int) -> str:
    """A term's end announced to an instructor, or a student warned that their jobs will be stopped."""
    try:
        with retry_when_transient(self):
            sent = term_end.send_notice(notice_id)
    except Refused as exc:
        logger.warning("mail: the relay refused the term notice %s: %s", notice_id, exc)
        return "refused"
    return "done" if sent else "gone"
