"""API tokens on the portal's WebSockets, for clients that are not browsers (`gpulab shell`).

A handshake with `Authorization: Token …` is that token's user, whatever cookies it carries; one without is the
session's user, as before. Browsers never add an Authorization header to a WebSocket handshake, so a page of
another site cannot borrow a token the way it could borrow cookies; the Origin check (websocket_origin.py) still
applies, and a client that is not a browser sends the portal's own origin. An unknown token, or a disabled
account's, is nobody: every consumer then refuses as it refuses a visitor who is not signed in.
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser
from rest_framework.authtoken.models import Token

SCHEME = b"token "


def _user_for(key: str):
    token = Token.objects.select_related("user").filter(key=key).first()
    return token.user if token is not None and token.user.is_active else AnonymousUser()


class TokenAuthMiddleware:
    """ASGI middleware inside the session's: a handshake's API token, where it has one, names its user."""

    def __init__(self, application) -> None:
        self.application = application

    async def __call__(self, scope, receive, send):
        header = dict(scope.get("headers", ())).get(b"authorization", b"")
        if header[: len(SCHEME)].lower() == SCHEME:
            key = header[len(SCHEME) :].decode("latin-1").strip()
            # The key goes along so that a long-lived socket can tell when it is revoked (sessions/terminal.py).
            scope = {**scope, "user": await database_sync_to_async(_user_for)(key), "api_token": key}
        return await self.application(scope, receive, send)
