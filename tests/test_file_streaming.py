"""Downloads that cannot stall the portal (sessions/streaming.py, sessions/api.py): no database connection is held
while a download waits on the cluster or the browser, and the stream never queries; a folder archive over its entry
or size limit is refused in words before anything streams; a download abandoned while a read is under way ends
quietly (no `generator already executing`, nothing in the log), its reader closed in its own thread and its SFTP
channel closed. The files are real folders on this machine behind a stand-in for the SFTP channel
(tests/local_sftp.py); the last test drives Django's own ASGI handler, as uvicorn does, and leaves mid-stream."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import threading
import time

import pytest
from asgiref.sync import async_to_sync
from django.core.handlers.asgi import ASGIHandler
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from rest_framework.authtoken.models import Token

from core.http_streams import ClosedWhenLeft
from sessions import api, streaming
from sessions.files import Session
from tests.local_sftp import LocalSFTP


@pytest.fixture
def run_dir(tmp_path, running_job):
    root = tmp_path / "gpulab-test" / "jobs" / str(running_job.pk)
    root.mkdir(parents=True)
    return root


class Recorder:
    """What happened, in order and from which thread: database connections closed, cursors asked for, SFTP calls."""

    def __init__(self, monkeypatch, home):
        self.events: list[tuple[str, str]] = []
        self.channels: list[LocalSFTP] = []
        recorder = self
        wrapper = type(connections["default"])  # SQLite keeps an in-memory database on close
        real_close, real_cursor = wrapper.close, BaseDatabaseWrapper.cursor

        def close(connection):
            recorder.events.append(("db-close", threading.current_thread().name))
            return real_close(connection)

        def cursor(connection):
            recorder.events.append(("db-query", threading.current_thread().name))
            return real_cursor(connection)

        monkeypatch.setattr(wrapper, "close", close)
        monkeypatch.setattr(BaseDatabaseWrapper, "cursor", cursor)

        class Channel(LocalSFTP):
            def _path(self, path):
                recorder.events.append(("sftp", threading.current_thread().name))
                return super()._path(path)

        @contextlib.contextmanager
        def opened(space):
            channel = Channel(home)
            recorder.channels.append(channel)
            try:
                yield Session(space, channel)
            finally:
                channel.close()

        monkeypatch.setattr(api, "opened", opened)

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.events]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("query", [{"path": "big.bin"}, {"path": "", "archive": "zip"}, {"path": "", "archive": "tar"}])
def test_no_database_connection_is_held_while_a_download_waits_on_the_cluster_or_streams(
    query, monkeypatch, tmp_path, run_dir, running_job, alice, api_for
):
    (run_dir / "big.bin").write_bytes(b"x" * (3 * 2**20 + 5))
    (run_dir / "sub").mkdir()
    (run_dir / "sub" / "empty.txt").write_bytes(b"")
    client = api_for(alice)
    recorder = Recorder(monkeypatch, tmp_path)
    response = client.get(f"/api/v1/files/jobs/{running_job.pk}/download/", query)
    assert response.status_code == 200
    before_body = recorder.kinds()
    first_sftp = before_body.index("sftp")
    assert "db-close" in before_body[:first_sftp]  # given back before the cluster is asked anything
    assert "db-query" not in before_body[first_sftp:]  # and never asked again
    del recorder.events[:]
    body = b"".join(response)
    assert len(body) > 3 * 2**20
    assert "db-query" not in recorder.kinds()  # the stream, in whatever thread, never touches the ORM
    assert all(channel.closed.is_set() for channel in recorder.channels)


@pytest.mark.parametrize("fmt", ["zip", "tar"])
def test_a_folder_with_more_entries_than_the_limit_is_refused_in_words_before_it_streams(
    fmt, monkeypatch, settings, tmp_path, run_dir, running_job, alice, api_for
):
    """The incident: a folder of empty folders. Folders count as entries: nothing would be archived, but every one
    of them would be listed."""
    settings.GPULAB_FILES_ARCHIVE_MAX_ENTRIES = 25
    for n in range(30):
        (run_dir / "many" / f"d{n:02}").mkdir(parents=True)
    recorder = Recorder(monkeypatch, tmp_path)
    answer = api_for(alice).get(f"/api/v1/files/jobs/{running_job.pk}/download/", {"path": "many", "archive": fmt})
    assert answer.status_code == 409
    assert answer.json()["detail"] == (
        "This folder holds more than 25 entries; download a smaller folder or use the terminal."
    )
    assert all(channel.closed.is_set() for channel in recorder.channels)
    settings.GPULAB_FILES_ARCHIVE_MAX_ENTRIES = 10_000
    assert api_for(alice).get(f"/api/v1/files/jobs/{running_job.pk}/download/", {"path": "many"}).status_code == 400


def test_a_folder_larger_than_the_limit_is_refused_in_words_before_it_streams(
    monkeypatch, settings, tmp_path, run_dir, running_job, alice, api_for
):
    settings.GPULAB_FILES_ARCHIVE_MAX_BYTES = 2**20
    (run_dir / "a.bin").write_bytes(b"a" * 700_000)
    (run_dir / "b.bin").write_bytes(b"b" * 700_000)
    Recorder(monkeypatch, tmp_path)
    answer = api_for(alice).get(f"/api/v1/files/jobs/{running_job.pk}/download/", {"path": "", "archive": "zip"})
    assert answer.status_code == 409
    assert (
        answer.json()["detail"] == "This folder holds more than 1 MiB; download a smaller folder or use the terminal."
    )


def test_a_stream_abandoned_while_a_read_is_under_way_ends_quietly_in_its_own_thread(caplog):
    """Cancelled (the browser left) while the reader is inside a read: the reader is closed after that read returns,
    in the thread that ran it, and the stream's end raises nothing but the cancellation."""
    reading, release = threading.Event(), threading.Event()
    threads, closed_in = set(), []

    def reader():
        try:
            threads.add(threading.current_thread().name)
            yield b"first"
            threads.add(threading.current_thread().name)
            reading.set()
            release.wait(10)  # a slow SFTP read
            yield b"second"
        finally:
            closed_in.append(threading.current_thread().name)

    async def consume():
        async with contextlib.aclosing(streaming._in_threads(reader)) as chunks:
            async for _chunk in chunks:
                pass

    async def abandon():
        task = asyncio.ensure_future(consume())
        while not reading.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with caplog.at_level(logging.INFO):
        async_to_sync(abandon)()
        release.set()
        deadline = time.monotonic() + 5
        while not closed_in and time.monotonic() < deadline:
            time.sleep(0.01)
    assert closed_in and set(closed_in) == threads and len(threads) == 1  # one thread read, and closed, the reader
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


@pytest.mark.django_db(transaction=True)
def test_a_download_the_browser_leaves_mid_stream_ends_quietly_and_closes_its_channel(
    monkeypatch, tmp_path, run_dir, running_job, alice, caplog
):
    """Through Django's ASGI handler, as uvicorn runs it: the browser disconnects while the next read is under way."""
    (run_dir / "big.bin").write_bytes(b"x" * (8 * 2**20))
    recorder = Recorder(monkeypatch, tmp_path)
    reading, release = threading.Event(), threading.Event()
    real_read = LocalSFTP.open

    def slow_open(self, path, mode="r"):
        handle = real_read(self, path, mode)
        fh, reads = handle.fh, []

        def read(size=-1):
            reads.append(size)
            if len(reads) == 2:  # the second chunk: the browser leaves while this read waits on the cluster
                reading.set()
                release.wait(10)
            return fh.read(size)

        handle.read = read
        return handle

    monkeypatch.setattr(LocalSFTP, "open", slow_open)
    token = Token.objects.create(user=alice).key
    path = f"/api/v1/files/jobs/{running_job.pk}/download/"
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"path=big.bin",
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Token {token}".encode())],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }
    sent = []

    async def run():
        asked = 0

        async def receive():
            nonlocal asked
            asked += 1
            if asked == 1:
                return {"type": "http.request", "body": b"", "more_body": False}
            while not reading.is_set():  # the first chunk went out; the next read waits on the cluster
                await asyncio.sleep(0.01)
            return {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)

        await asyncio.wait_for(ASGIHandler()(scope, receive, send), 30)

    with caplog.at_level(logging.INFO):
        async_to_sync(run)()
        release.set()
        deadline = time.monotonic() + 5
        while not all(c.closed.is_set() for c in recorder.channels) and time.monotonic() < deadline:
            time.sleep(0.01)
    assert sent[0]["status"] == 200
    assert sum(len(m.get("body", b"")) for m in sent if m["type"] == "http.response.body") < 8 * 2**20
    assert recorder.channels and all(c.closed.is_set() for c in recorder.channels)  # the SFTP channel is closed
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert not problems, [r.getMessage() for r in problems]


def test_the_asgi_handler_closes_a_left_download_s_generator_itself_not_the_garbage_collector(monkeypatch):
    """A browser that leaves mid-stream: by the time Django's ASGI handler returns, the download's own generator has
    run its `finally` (where an archive gives its slot back and a channel ends), with the garbage collector off and
    the response still referenced, so nothing but the handler could have closed it."""
    ended = []

    async def chunks():
        try:
            while True:
                yield b"x" * 1024
        finally:
            ended.append(True)

    response = ClosedWhenLeft(chunks(), content_type="application/zip")

    async def get_response(self, request):
        return response

    monkeypatch.setattr(ASGIHandler, "get_response_async", get_response)
    scope = {"type": "http", "method": "GET", "path": "/", "query_string": b"", "headers": [], "server": ("t", 80)}
    streamed = asyncio.Event()

    async def run():
        async def receive():
            if not streamed.is_set():
                streamed.set()
                return {"type": "http.request", "body": b"", "more_body": False}
            await asyncio.sleep(0.05)  # some chunks go out, then the browser leaves
            return {"type": "http.disconnect"}

        async def send(message):
            await asyncio.sleep(0.001)  # a network that takes its time: the browser leaves while a chunk is sent

        await asyncio.wait_for(ASGIHandler()(scope, receive, send), 10)
        return list(ended)  # before the loop ends: a server's loop runs on, so its shutdown would close it too late

    gc.disable()
    try:
        assert async_to_sync(run)() == [True]
    finally:
        gc.enable()
