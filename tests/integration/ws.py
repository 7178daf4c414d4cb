"""A real WebSocket client for the telemetry sockets, logged in with a Django session cookie."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from django.test import Client
from websockets.sync.client import connect


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


class Socket:
    def __init__(self, web, user, path: str):
        self.messages: list[dict] = []
        self.ws = connect(
            web.url.replace("http://", "ws://") + path,
            additional_headers={"Cookie": f"sessionid={session_cookie(user)}", "Origin": web.url},
            open_timeout=15,
            max_size=2**24,
        ).__enter__()

    def __enter__(self) -> Socket:
        return self

    def __exit__(self, *exc) -> None:
        self.ws.close()

    def wait(self, predicate: Callable[[dict], bool], *, timeout: float = 30, what: str = "a message") -> dict:
        """The first message (from now on) for which predicate holds; every message is kept in self.messages."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                raw = self.ws.recv(timeout=max(0.1, deadline - time.monotonic()))
            except TimeoutError:
                break
            message = json.loads(raw)
            self.messages.append(message)
            if predicate(message):
                return message
        raise AssertionError(f"no {what} within {timeout:.0f}s; last messages: {self.messages[-3:]}")

    def frames(self, kind: str) -> list[dict]:
        return [m for m in self.messages if m.get("type") == "frame" and m.get("kind") == kind]
