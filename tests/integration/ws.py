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


def course_rows(socket: Socket, *, timeout: float = 30) -> list[dict]:
    """The class dashboard's GPUs as its page reads them, once it has any: a course frame's columns joined to the
    roster it names, which the socket's heat or an earlier frame brought (docs/telemetry-wire.md), a row per GPU."""
    rosters: dict[str, list[dict]] = {}

    def rows(message: dict) -> list[dict]:
        if message.get("type") == "heat" and message.get("roster"):
            entries = {g["key"]: g for g in message["gpus"]}
            rosters[message["roster"]] = [entries[key] for key in message["live"]]
        if message.get("kind") != "course":
            return []
        if "gpus" in message:
            rosters[message["roster"]] = message["gpus"]
        roster = rosters.get(message["roster"])
        if roster is None:  # a roster this socket was never told: the page asks for the heat
            return []
        columns = zip(roster, message["util"], message["mem"], message["idle_s"], strict=True)
        return [{**entry, "util": util, "mem": mem, "idle_s": idle_s} for entry, util, mem, idle_s in columns]

    return rows(socket.wait(lambda m: bool(rows(m)), timeout=timeout, what="a course frame with GPUs"))
