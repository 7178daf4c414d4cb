"""Signed one-click unsubscribe links: the token names a user and an event, and turns that event's email off.

Signed with the portal's SECRET_KEY under a salt of its own, so a token made for anything else does not verify.
It never expires: an old mail's link still works.
"""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.urls import reverse

_SALT = "notifications.unsubscribe"


def token(user_id: int, event: str) -> str:
    return signing.dumps({"u": user_id, "e": event}, salt=_SALT, compress=True)


def link(user_id: int, event: str) -> str:
    return settings.PORTAL_URL + reverse("notifications:unsubscribe", args=[token(user_id, event)])


def read(value: str) -> tuple[int, str]:
    """(user id, event) from a token; signing.BadSignature for anything forged or damaged."""
    data = signing.loads(value, salt=_SALT)
    if not isinstance(data, dict) or not isinstance(data.get("u"), int) or not isinstance(data.get("e"), str):
        raise signing.BadSignature("Not an unsubscribe token.")
    return data["u"], data["e"]
