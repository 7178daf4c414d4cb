"""Signing a command-line client in through the browser, for users of single sign-on (no password to type).

The shape of OAuth's device authorization grant (RFC 8628): the client asks for a pair of codes, shows the short one
and polls with the long one; the user, signed in in a browser, types the short code on the portal's page and
confirms. The user always types the code: a link with the code in it would let someone else's client be confirmed
by a user who merely clicked (the RFC's remote phishing case). Codes live ten minutes and serve once.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from .models import CliLogin

LIFETIME = timedelta(minutes=10)
POLL_SECONDS = 2
# No 0/O, 1/I/L, U: a code read off one screen and typed into another.
ALPHABET = "ABCDEFGHJKMNPQRSTVWXYZ23456789"
CODE_LENGTH = 8


@dataclass(frozen=True)
class Started:
    device_code: str
    user_code: str
    expires_in: int


class Pending(Exception):
    """Not confirmed yet: ask again in POLL_SECONDS."""


class Ended(Exception):
    """Refused in the browser, expired or already used: the words say which and what to do."""


def _hash(device_code: str) -> str:
    return hashlib.sha256(device_code.encode()).hexdigest()


def shown(user_code: str) -> str:
    """ABCD-EFGH, as the terminal prints it."""
    return f"{user_code[:4]}-{user_code[4:]}"


def typed(text: str) -> str:
    """What a user typed, as stored: dashes, spaces and case do not matter."""
    return "".join(ch for ch in text.upper() if ch.isalnum())


def start(client: str, address: str | None) -> Started:
    CliLogin.objects.filter(expires_at__lt=timezone.now()).delete()
    device_code = secrets.token_urlsafe(32)
    while True:
        user_code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
        if not CliLogin.objects.filter(user_code=user_code).exists():
            break
    CliLogin.objects.create(
        device_hash=_hash(device_code),
        user_code=user_code,
        client=client[:100],
        address=address,
        expires_at=timezone.now() + LIFETIME,
    )
    return Started(device_code, user_code, int(LIFETIME.total_seconds()))


def waiting(user_code: str) -> CliLogin | None:
    """The unconfirmed, unexpired login with this code, or None."""
    return CliLogin.objects.filter(
        user_code=typed(user_code), user__isnull=True, refused=False, expires_at__gt=timezone.now()
    ).first()


def confirm(login: CliLogin, user) -> bool:
    """The signed-in user confirms; False when someone else's confirmation or refusal came first, or it expired."""
    waiting_still = {"user__isnull": True, "refused": False, "expires_at__gt": timezone.now()}
    return bool(CliLogin.objects.filter(pk=login.pk, **waiting_still).update(user=user))


def refuse(login: CliLogin) -> None:
    CliLogin.objects.filter(pk=login.pk, user__isnull=True).update(refused=True)


def collect(device_code: str) -> tuple[str, str]:
    """(token, username) for the client holding `device_code`, once; Pending or Ended otherwise."""
    with transaction.atomic():
        login = CliLogin.objects.select_for_update().filter(device_hash=_hash(device_code)).first()
        if login is None:
            raise Ended("This sign-in is unknown or was already used: run `gpulab login` again.")
        if login.refused:
            login.delete()
            raise Ended("The sign-in was refused in the browser.")
        if login.expires_at <= timezone.now():  # confirmed or not: a sign-in serves within its ten minutes only
            login.delete()
            raise Ended("The code expired before it was used: run `gpulab login` again.")
        if login.user is None:
            raise Pending
        user = login.user
        login.delete()
    if not user.is_active:
        raise Ended("This account is disabled.")
    token, _ = Token.objects.get_or_create(user=user)
    return token.key, user.get_username()
