"""Encryption of stored credentials: MultiFernet over settings.CREDENTIAL_KEYS, newest key first.

Adding a new key at the front and running `manage.py rotate_credentials` re-encrypts every secret under it;
the old key can then be removed from the environment.
"""

from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class CredentialKeyError(Exception):
    """A stored secret cannot be decrypted with any configured key."""


@lru_cache(maxsize=4)
def _multifernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in keys])


def _cipher() -> MultiFernet:
    return _multifernet(tuple(settings.CREDENTIAL_KEYS))


def encrypt(plaintext: str) -> str:
    return _cipher().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _cipher().decrypt(token.encode()).decode()
    except InvalidToken:
        raise CredentialKeyError(
            "A stored credential cannot be decrypted with the configured CREDENTIAL_KEYS. "
            "Was a key removed before `manage.py rotate_credentials` ran?"
        ) from None


def rotate(token: str) -> str:
    """The same secret encrypted under the newest key."""
    try:
        return _cipher().rotate(token.encode()).decode()
    except InvalidToken:
        raise CredentialKeyError(
            "A stored credential cannot be decrypted with the configured CREDENTIAL_KEYS."
        ) from None
