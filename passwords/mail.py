"""The mails of local accounts: an invitation to set a password, and a password reset. Composed and sent here,
called only by the Celery tasks in workers/mail.py; requests queue them with `queue` after their commit.

A reset goes to every active account with that email address that signs in with a local password (or has been
invited and not yet signed in). Accounts that sign in only through the campus (no usable password, signed in
before) get none, so a reset never gives a campus account a second way in.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string

from .tokens import invitation_tokens, link, reset_tokens

logger = logging.getLogger(__name__)


def queue(task: str, *args) -> None:
    """Queue a mail task once the current transaction commits. By name: the apps never import workers/."""
    transaction.on_commit(lambda: current_app.send_task(f"workers.mail.{task}", args=list(args)))


def _send(template: str, user, context: dict) -> None:
    context = {**context, "user": user, "portal_url": settings.PORTAL_URL}
    subject = " ".join(render_to_string(f"passwords/mail/{template}_subject.txt", context).split())
    body = render_to_string(f"passwords/mail/{template}.txt", context)
    send_mail(subject, body, None, [user.email])


def send_invitation(user, course, invited_by=None) -> None:
    hours = settings.INVITATION_EXPIRY_SECONDS // 3600
    expiry = f"{hours // 24} days" if hours >= 48 else f"{hours} hours"
    context = {"course": course, "invited_by": invited_by, "expiry": expiry}
    context["link"] = link(user, invitation_tokens, "passwords:set")
    _send("invitation", user, context)


def reset_recipients(email: str):
    users = get_user_model().objects.filter(email__iexact=email.strip(), is_active=True)
    return [u for u in users if u.has_usable_password() or u.last_login is None]


def send_reset(email: str) -> int:
    """Mail a reset link to each local account with this address; how many were sent (0 for an unknown address)."""
    hours = max(1, settings.PASSWORD_RESET_EXPIRY_SECONDS // 3600)
    sent = 0
    for user in reset_recipients(email):
        context = {"link": link(user, reset_tokens, "passwords:reset_confirm"), "expiry": f"{hours} hour(s)"}
        _send("reset", user, context)
        sent += 1
    return sent
