"""Static files as uvicorn serves them (Django's ASGI handler): streamed in blocks, never read whole before the first
byte (portal/static_files.py), with WhiteNoise's headers, ranges and HEAD as they were."""

from __future__ import annotations

import asyncio
import tracemalloc

import pytest
from asgiref.sync import async_to_sync
from django.contrib.staticfiles import finders
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from portal.static_files import StreamingFilesHandler

SIZE = 24 * 2**20


@pytest.fixture(autouse=True)
def _no_database_between_requests():
    """A static file touches no database, but Django's handler closes stale connections at each request's start and
    end, and an earlier test in this process may have left one open in this thread: as Django's own test client does,
    those signals are off while these requests run (else pytest-django refuses the database access)."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def big_static(tmp_path, settings):
    folder = tmp_path / "static-extra"
    (folder / "bench").mkdir(parents=True)
    data = bytes(range(256)) * (SIZE // 256)
    (folder / "bench" / "big.mp4").write_bytes(data)  # a type WhiteNoise keeps no compressed copy of
    settings.STATICFILES_DIRS = [*settings.STATICFILES_DIRS, str(folder)]
    finders.get_finder.cache_clear()
    yield data
    finders.get_finder.cache_clear()


def serve(method: str = "GET", headers: tuple = ()) -> tuple[dict, list[bytes], int]:
    """(the start message, the body messages, the peak of Python's traced memory while serving) of one request for
    the big file, through a fresh ASGI handler (its WhiteNoise indexes the static folders)."""
    handler = StreamingFilesHandler()  # as portal.asgi serves Django
    scope = {
        "type": "http",
        "method": method,
        "path": "/static/bench/big.mp4",
        "query_string": b"",
        "headers": [(b"host", b"testserver"), *headers],
        "server": ("testserver", 80),
    }
    messages: list[dict] = []

    async def run():
        asked = asyncio.Event()

        async def receive():
            if not asked.is_set():
                asked.set()
                return {"type": "http.request", "body": b"", "more_body": False}
            await asyncio.Event().wait()  # the browser stays until the body has arrived

        async def send(message):
            messages.append({**message, "body": message.get("body", b"")[:0]})  # kept empty: memory is measured
            messages[-1]["length"] = len(message.get("body", b""))

        await asyncio.wait_for(handler(scope, receive, send), 30)

    tracemalloc.start()
    try:
        async_to_sync(run)()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    start, body = messages[0], [m for m in messages[1:] if m["type"] == "http.response.body"]
    return start, body, peak


def test_a_large_static_file_is_streamed_in_blocks_never_held_whole(big_static):
    start, body, peak = serve()
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    assert start["status"] == 200 and headers["content-type"] == "video/mp4"
    assert int(headers["content-length"]) == SIZE == sum(m["length"] for m in body)
    assert max(m["length"] for m in body) <= 2**20 and len(body) >= SIZE // 2**20
    assert peak < SIZE // 4, f"{peak / 2**20:.1f} MiB traced while serving a {SIZE / 2**20:.0f} MiB file"


def test_a_range_and_a_head_of_a_static_file_are_answered_as_whitenoise_answers_them(big_static):
    start, body, _ = serve(headers=((b"range", b"bytes=1000-2999999"),))
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    assert start["status"] == 206 and headers["content-range"] == f"bytes 1000-2999999/{SIZE}"
    assert sum(m["length"] for m in body) == 2999000 == int(headers["content-length"])
    start, body, _ = serve("HEAD")
    assert start["status"] == 200 and sum(m["length"] for m in body) == 0
