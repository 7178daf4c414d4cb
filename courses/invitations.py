"""Invitations: each new account the roster creates gets a mail with a link to set its password.

Invariant: an Invitation row is written for every mail queued, and the mail itself is sent by a Celery task after
the commit (workers/mail.py), never inside the request. Only people who have never signed in are invited: an
existing account is never sent a link that would replace its password.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from passwords.mail import queue

from .models import Course, Enrollment, Invitation

RESEND_PAUSE = timedelta(minutes=1)  # a double click, or "resend all" twice, mails nobody twice


def invitable(user) -> bool:
    """Whether a mailed link to set a portal password makes sense: local passwords on (SIGNON_LOCAL_PASSWORDS; with
    campus sign-on only, people sign in with their campus account), an email address, never signed in."""
    local = getattr(settings, "SIGNON_LOCAL_PASSWORDS", True)
    return bool(local and user.is_active and user.email and user.last_login is None)


def invite(course: Course, user, *, invited_by=None) -> bool:
    """Queue an invitation for one person; False (nothing queued) when they cannot or need not be invited."""
    if not invitable(user):
        return False
    recent = Invitation.objects.filter(course=course, user=user, created_at__gt=timezone.now() - RESEND_PAUSE)
    if recent.exists():
        return False
    invitation = Invitation.objects.create(course=course, user=user, invited_by=invited_by)
    queue("send_invitation", invitation.pk)
    return True


def invite_all(course: Course, users, *, invited_by=None) -> int:
    return sum(invite(course, user, invited_by=invited_by) for user in users)


def not_signed_in(course: Course) -> list[Enrollment]:
    """The course's people who have not accepted yet (never signed in), each with `.invitation`: their latest
    (None if never invited), whose `refused` holds the relay's answer when it refused the mail."""
    pending = list(
        course.enrollments.filter(user__last_login__isnull=True).select_related("user").order_by("user__username")
    )
    invitations = Invitation.objects.filter(course=course, user__in=[e.user_id for e in pending])
    latest = {i.user_id: i for i in invitations.order_by("created_at", "pk")}  # the newest of each wins
    for enrollment in pending:
        enrollment.invitation = latest.get(enrollment.user_id)
    return pending
