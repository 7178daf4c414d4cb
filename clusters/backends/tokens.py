"""What the portal reads from an API token that is a JWT (slurmrestd's): who it is for (`sun`) and when it lapses
(`exp`). Shared by the credential forms and services (clusters/) and the slurm-rest kind.

The signature is slurmctld's business; the portal only reads the claims to warn before expiry, to stop using a
lapsed token with a clear message, and to know whose token it holds.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime


class NotAToken(ValueError):
    pass


def claims(token: str) -> dict:
    """The token's payload, or NotAToken when it is not a JWT (three base64url parts, a JSON object between)."""
    parts = token.strip().split(".")
    if len(parts) != 3:
        raise NotAToken("A slurmrestd token is a JWT: three parts separated by dots (`scontrol token` prints one).")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        data = json.loads(base64.urlsafe_b64decode(payload))
    except (binascii.Error, ValueError):
        raise NotAToken("The token's middle part is not base64url-encoded JSON; paste the whole token.") from None
    if not isinstance(data, dict):
        raise NotAToken("The token's payload is not a JSON object.")
    return data


def expires_at(token: str) -> datetime | None:
    """When the token lapses (its `exp`), or None when it never does."""
    exp = claims(token).get("exp")
    if not isinstance(exp, int | float):
        return None
    return datetime.fromtimestamp(exp, tz=UTC)


def user_of(token: str) -> str:
    """The SLURM user the token was made for (`sun`), or ""."""
    try:
        sun = claims(token).get("sun", "")
    except NotAToken:
        return ""
    return sun if isinstance(sun, str) else ""
