"""A real SMTP server on 127.0.0.1 (aiosmtpd) that keeps what it receives, for the mail tests to read."""

from __future__ import annotations

import email
import email.policy
import re
import socket
import threading
import time
from email.message import EmailMessage

from aiosmtpd.controller import Controller


class Inbox:
    """aiosmtpd's handler: every message accepted, parsed and kept in arrival order. A recipient whose address
    holds "defer" is answered 451 (try later), one with "refuse" 550 (no such user); each try is counted."""

    def __init__(self):
        self._lock = threading.Lock()
        self._messages: list[EmailMessage] = []
        self.tries: dict[str, int] = {}

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        with self._lock:
            self.tries[address] = self.tries.get(address, 0) + 1
        if "defer" in address:
            return "451 4.3.0 Mailbox busy, try again later"
        if "refuse" in address:
            return "550 5.1.1 No such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        message["X-Envelope-To"] = ", ".join(envelope.rcpt_tos)
        with self._lock:
            self._messages.append(message)
        return "250 Message accepted for delivery"

    def messages(self, to: str | None = None) -> list[EmailMessage]:
        with self._lock:
            found = list(self._messages)
        return [m for m in found if to is None or to in m["X-Envelope-To"]]

    def clear(self) -> None:
        with self._lock:
            self._messages.clear()
            self.tries.clear()

    def wait_for(self, to: str, *, count: int = 1, timeout: float = 60) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.messages(to)
            if len(found) >= count:
                return found
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout:.0f}s waiting for {count} mail(s) to {to}")


def body(message: EmailMessage) -> str:
    return message.get_body(preferencelist=("plain",)).get_content()


def link_in(message: EmailMessage) -> str:
    match = re.search(r"https?://\S+/password/(?:set|reset)/\S+/", body(message))
    assert match, f"no password link in:\n{body(message)}"
    return match.group(0)


class SMTPServer:
    def __init__(self):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.inbox = Inbox()
        self.controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port)

    def start(self) -> SMTPServer:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()
