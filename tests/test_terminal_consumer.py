"""The terminal socket's data path, with a PTY stand-in at the kind's interface (open_terminal): keys reach the PTY and
its echo comes back as binary frames, and no key takes a hop to a database thread (Channels' close_old_connections
on every message costs about 0.2 ms of the echo's time); the access check still runs at connect."""

from __future__ import annotations

import asyncio
import contextlib
import os

import channels.db
import pytest
from asgiref.testing import ApplicationCommunicator
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from django.db import connections

from clusters import kinds
from sessions.routing import websocket_urlpatterns


class EchoPty:
    """The kind's Terminal interface (fileno, read, ended, write, resize, close) over a pipe: what is written comes
    back as output, as a PTY's echo does."""

    def __init__(self):
        self._out, self._in = os.pipe()
        os.set_blocking(self._out, False)
        self.written, self.ended = b"", False

    def fileno(self) -> int:
        return self._out

    def read(self) -> bytes:
        try:
            return os.read(self._out, 65536)
        except BlockingIOError:
            return b""

    def write(self, data: bytes) -> None:
        self.written += data
        os.write(self._in, data)

    def resize(self, cols: int, rows: int) -> None:
        pass

    def close(self) -> None:
        for fd in (self._out, self._in):
            with contextlib.suppress(OSError):
                os.close(fd)


@pytest.fixture
def counted_closes(monkeypatch):
    """How often Channels ran close_old_connections (in its worker thread) for this consumer's messages."""
    calls = []
    real = channels.db.close_old_connections
    monkeypatch.setattr(channels.db, "close_old_connections", lambda: (calls.append(1), real())[1])
    return calls


def with_pty(monkeypatch, job, pty):
    """The job's kind opens `pty` for any terminal."""
    monkeypatch.setattr(type(kinds.kind_of(job.cluster.kind)), "open_terminal", lambda self, job, **size: pty)
    return pty


def as_user(user):
    """The portal's socket routes, with `user` as the one the session cookie would name."""
    router = URLRouter(websocket_urlpatterns)

    async def app(scope, receive, send):
        return await router({**scope, "user": user}, receive, send)

    return app


async def _connect(user, job) -> tuple[ApplicationCommunicator, dict]:
    """The browser's handshake (ASGI messages, as uvicorn sends them); the portal's first answer."""
    scope = {"type": "websocket", "path": f"/ws/jobs/{job.pk}/terminal/", "query_string": b"cols=80&rows=24"}
    communicator = ApplicationCommunicator(as_user(user), {**scope, "headers": [], "subprotocols": []})
    await communicator.send_input({"type": "websocket.connect"})
    return communicator, await communicator.receive_output(timeout=10)


async def _type_and_read(user, job, keys: str, closes: list) -> tuple[str, str, int]:
    """Type `keys` one at a time, each once the last one's echo came: (the handshake's answer, the echo, how many
    close_old_connections ran for the keys after the first, whose echo says the connect's own work is done)."""
    communicator, answer = await _connect(user, job)
    echoed, before = "", None
    if answer["type"] == "websocket.accept":
        for key in keys:
            await communicator.send_input({"type": "websocket.receive", "bytes": key.encode()})
            echoed += (await communicator.receive_output(timeout=5))["bytes"].decode()
            before = len(closes) if before is None else before
    while_typing = len(closes) - (before or 0)
    await communicator.send_input({"type": "websocket.disconnect", "code": 1000})
    await communicator.wait(timeout=5)
    await database_sync_to_async(connections.close_all)()  # the worker thread's connection, before the test db goes
    return answer["type"], echoed, while_typing


@pytest.mark.django_db(transaction=True)
def test_keys_echo_back_without_a_database_hop_per_key(monkeypatch, counted_closes, running_job, alice):
    job = running_job
    pty = with_pty(monkeypatch, job, EchoPty())

    answer, echoed, closes_while_typing = asyncio.run(_type_and_read(alice, job, "hostname", counted_closes))

    assert answer == "websocket.accept" and pty.written == b"hostname" and echoed == "hostname"
    assert closes_while_typing == 0, "keys' messages went through close_old_connections"


@pytest.mark.django_db(transaction=True)
def test_another_students_job_is_refused_before_any_pty_opens(monkeypatch, running_job, bob):
    job = running_job
    opened = []
    monkeypatch.setattr(
        type(kinds.kind_of(job.cluster.kind)), "open_terminal", lambda self, job, **size: opened.append(1)
    )

    answer = asyncio.run(_refused(bob, job))

    assert (answer, opened) == ({"type": "websocket.close", "code": 4404}, [])


async def _refused(user, job) -> dict:
    _, answer = await _connect(user, job)
    await database_sync_to_async(connections.close_all)()
    return answer


@pytest.mark.django_db(transaction=True)
def test_an_instructor_s_arrival_reaches_the_student_s_open_terminal_between_keys(monkeypatch, running_job, alice):
    """Keys are read in the consumer's own loop and the channel layer by a task of its own: a group message still
    arrives while the student types, one that fails does not stop the next, and the socket's end stops that task."""
    job = running_job
    with_pty(monkeypatch, job, EchoPty())

    frames, left = asyncio.run(_told_while_typing(alice, job))

    assert frames == [b"a", '{"notice": "Ms Ada (instructor) opened a terminal in this job."}', b"b"]
    assert left == [], "tasks outlived the socket"


async def _told_while_typing(user, job) -> list:
    from channels.layers import get_channel_layer

    communicator, answer = await _connect(user, job)
    assert answer["type"] == "websocket.accept"
    frames = []
    await communicator.send_input({"type": "websocket.receive", "bytes": b"a"})
    frames.append((await communicator.receive_output(timeout=5))["bytes"])
    group, note = f"terminal.job.{job.pk.hex}", "Ms Ada (instructor) opened a terminal in this job."
    await get_channel_layer().group_send(group, {"type": "no.such.handler"})  # logged, and the next one still comes
    await get_channel_layer().group_send(group, {"type": "staff.opened", "text": note})
    frames.append((await communicator.receive_output(timeout=5))["text"])
    await communicator.send_input({"type": "websocket.receive", "bytes": b"b"})
    frames.append((await communicator.receive_output(timeout=5))["bytes"])
    await communicator.send_input({"type": "websocket.disconnect", "code": 1000})
    await communicator.wait(timeout=5)
    await database_sync_to_async(connections.close_all)()
    return frames, _tasks_left()


def _tasks_left() -> list[str]:
    """The consumer's tasks still alive once its socket has gone (the pump, the watch, the channel layer's reader)."""
    names = ("_pump", "_watch", "_layer_messages")
    return [repr(t) for t in asyncio.all_tasks() if not t.done() and any(n in repr(t.get_coro()) for n in names)]


class BrokenPty(EchoPty):
    """A PTY whose other end died under a key (EIO on write)."""

    closed = False

    def write(self, data: bytes) -> None:
        raise OSError(5, "Input/output error")

    def close(self) -> None:
        self.closed = True
        super().close()


@pytest.mark.django_db(transaction=True)
def test_a_key_that_cannot_be_written_still_closes_the_pty_and_leaves_no_task(monkeypatch, running_job, alice):
    pty = with_pty(monkeypatch, running_job, BrokenPty())

    failed, left = asyncio.run(_type_into_broken(alice, running_job))

    assert failed and pty.closed and left == []


async def _type_into_broken(user, job) -> tuple[bool, list[str]]:
    communicator, answer = await _connect(user, job)
    assert answer["type"] == "websocket.accept"
    await communicator.send_input({"type": "websocket.receive", "bytes": b"x"})
    try:
        await communicator.wait(timeout=5)  # the error ends the consumer, as uvicorn would then see it
        failed = False
    except OSError:
        failed = True
    await asyncio.sleep(0)  # cancelled tasks run their last step
    await database_sync_to_async(connections.close_all)()
    return failed, _tasks_left()


class ExitingPty(EchoPty):
    """A shell that prints its last words and exits when told `exit`: the PTY then reads empty, as after EIO."""

    failure = ""

    def write(self, data: bytes) -> None:
        if data == b"exit\r":
            os.write(self._in, b"logout\r\n")
            os.close(self._in)
        else:
            super().write(data)

    def read(self) -> bytes:
        data = super().read()
        self.ended = self.ended or not data
        return data


@pytest.mark.django_db(transaction=True)
def test_the_shell_s_last_output_arrives_before_the_page_is_told_it_ended(monkeypatch, running_job, alice):
    job = running_job
    with_pty(monkeypatch, job, ExitingPty())

    frames = asyncio.run(_exit_shell(alice, job))

    assert b"".join(f["bytes"] for f in frames if f.get("bytes")) == b"logout\r\n"
    told = [f for f in frames if f.get("text")]
    assert len(told) == 1 and "The shell has ended" in told[0]["text"]
    assert frames[-1] == {"type": "websocket.close", "code": 1000}


async def _exit_shell(user, job) -> list[dict]:
    communicator, answer = await _connect(user, job)
    assert answer["type"] == "websocket.accept"
    await communicator.send_input({"type": "websocket.receive", "bytes": b"exit\r"})
    frames = []
    while not frames or frames[-1]["type"] != "websocket.close":
        frames.append(await communicator.receive_output(timeout=5))
    await communicator.send_input({"type": "websocket.disconnect", "code": 1000})
    await communicator.wait(timeout=5)
    await database_sync_to_async(connections.close_all)()
    return frames
