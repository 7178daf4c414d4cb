"""The links mailed to set a password: one kind for invitations, one for resets, each with its own lifetime.

A link is single use because it is bound to the account's password hash, last sign-in and email: setting the
password (or signing in) changes them and every earlier link stops working. It names one user: a token made for
one account does not check for another. The two kinds have different salts, so a reset link is never taken as an
invitation with its longer lifetime.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import base36_to_int, urlsafe_base64_encode


class ExpiringTokens(PasswordResetTokenGenerator):
    """Django's password-reset tokens with a salt and a lifetime of their own (Django alone checks one global
    PASSWORD_RESET_TIMEOUT, set to the longest of ours)."""

    def __init__(self, salt: str, lifetime_setting: str):
        super().__init__()
        self.key_salt = salt
        self.lifetime_setting = lifetime_setting

    @property
    def lifetime(self) -> int:
        return getattr(settings, self.lifetime_setting)

    def check_token(self, user, token) -> bool:
        try:
            issued = base36_to_int(str(token).split("-")[0])
        except ValueError:
            return False
        if self._num_seconds(self._now()) - issued > self.lifetime:
            return False
        return super().check_token(user, token)


invitation_tokens = ExpiringTokens("gpulab.passwords.invitation", "INVITATION_EXPIRY_SECONDS")
reset_tokens = ExpiringTokens("gpulab.passwords.reset", "PASSWORD_RESET_EXPIRY_SECONDS")


def link(user, tokens: ExpiringTokens, url_name: str) -> str:
    """The absolute link for a mail, on the portal's public address (tasks have no request to take it from)."""
    uidb64 = urlsafe_base64_encode(force_bytes(user.pk))
    path = reverse(url_name, kwargs={"uidb64": uidb64, "token": tokens.make_token(user)})
    return f"{settings.PORTAL_URL}{path}"
