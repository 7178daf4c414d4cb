"""Sending files and archives to the browser: HTTP ranges, and cluster reads turned into an async stream.

Invariant: the response is produced chunk by chunk while it is sent (uvicorn reads an async iterator), so a large
file or folder is never held whole in memory; the SFTP channel, or OpenSSH's client, closes when the download ends
or is abandoned. At most GPULAB_FILES_OPENSSH_DOWNLOADS downloads per web process run an OpenSSH client (each a
login on the cluster); more go over the pooled SFTP connection.

No database connection is held while a download waits on the cluster or the browser: the view does every access
check and read first and gives its connections back (release_database) before it asks the cluster anything, and the
stream gives back whatever the request's thread took since before its first byte. The stream itself never touches
the ORM. Its blocking reads run in one thread of its own, which also closes the reader: an abandoned download waits
for the read under way to return, then closes it there (closing a generator from another thread while it runs is
"generator already executing"), with nothing logged; the SFTP channel and any remote process end with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
from collections.abc import AsyncGenerator, Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections
from django.http import HttpResponse, HttpResponseBase
from django.utils.http import content_disposition_header

from clusters.backends.base import BackendError
from core.http_streams import ClosedWhenLeft

logger = logging.getLogger(__name__)

RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def parse_range(header: str, size: int) -> tuple[int, int] | Literal[False] | None:
    """(start, length) of a single `Range: bytes=a-b`; None for the whole file; False if it cannot be satisfied."""
    match = RANGE.match(header.strip()) if header else None
    if match is None:
        return None  # absent, or several ranges: the whole file is a valid answer
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:  # the last N bytes
        length = min(int(last), size)
        return (size - length, length) if length else False
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if start >= size or end < start:
        return False
    return start, end - start + 1


def release_database() -> None:
    """Give back this thread's database connections (to the pool, or closed): called once every access check and read
    of a download is done, before the cluster or the browser may keep it waiting. A connection inside a transaction is
    left alone (a test's, or a caller's that still needs it)."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()


def _close_quietly(made: Future[Iterator[bytes]]) -> None:
    """In the stream's own thread, after the read under way returned: end the reader make() made (its SFTP channel,
    its remote process), and give back any connection the thread opened."""
    try:
        iterator = None if made.cancelled() or made.exception() else made.result()
        close = getattr(iterator, "close", None)  # a generator's; an iterator without one holds nothing to end
        if callable(close):
            close()
    except Exception:  # the download is over; what failed while closing changes nothing for anyone
        logger.info("download: closing an abandoned reader failed", exc_info=True)
    finally:
        connections.close_all()


async def _in_threads(make: Callable[[], Iterator[bytes]]) -> AsyncGenerator[bytes, None]:
    """make()'s chunks, its blocking reads run one after the other in a thread of this stream's own (never the
    thread Django keeps for the request's ORM code, nor a pool other requests wait on)."""
    await sync_to_async(release_database, thread_sensitive=True)()  # what the request's thread took since the view
    loop = asyncio.get_running_loop()
    reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpulab-download")
    made = reader.submit(make)
    try:
        iterator = await asyncio.wrap_future(made)
        while (chunk := await loop.run_in_executor(reader, next, iterator, None)) is not None:
            if chunk:
                yield chunk
    finally:
        # Queued behind a read still under way (an abandoned download): never runs beside it. Not awaited, so a
        # cancelled stream ends at once; the thread ends once it has closed the reader.
        reader.submit(_close_quietly, made)
        reader.shutdown(wait=False)


class _Slots:
    """How many downloads run an OpenSSH client in this process (threads too: the test client streams from them)."""

    def __init__(self) -> None:
        self.lock, self.running = threading.Lock(), 0

    def take(self) -> bool:
        with self.lock:
            if self.running >= settings.GPULAB_FILES_OPENSSH_DOWNLOADS:
                return False
            self.running += 1
            return True

    def give_back(self) -> None:
        with self.lock:
            self.running -= 1


openssh_slots = _Slots()


async def preferring(
    fast: Callable[[], AsyncGenerator[bytes, None]] | None,
    slow: Callable[[int, int], Generator[bytes, None, None]],
    start: int,
    length: int,
) -> AsyncGenerator[bytes, None]:
    """The bytes [start, start+length): fast()'s (OpenSSH) while a slot is free, else slow(start, length)'s (the
    pooled SFTP connection, in threads). Should OpenSSH fail part way (a login refused, a dropped connection), the
    rest comes by SFTP from where it stopped: the status and Content-Length are already sent."""
    await sync_to_async(release_database, thread_sensitive=True)()  # what the request's thread took since the view
    sent = 0
    if fast is not None and openssh_slots.take():
        try:
            async with contextlib.aclosing(fast()) as chunks:
                async for chunk in chunks:
                    sent += len(chunk)
                    yield chunk
            return
        except BackendError as exc:
            logger.warning(
                "download: OpenSSH stopped after %d of %d bytes (%s); the rest goes by SFTP", sent, length, exc
            )
        finally:
            openssh_slots.give_back()
        if sent >= length > 0:  # everything had arrived when ssh failed
            return
    async with contextlib.aclosing(_in_threads(lambda: slow(start + sent, length - sent))) as chunks:
        async for chunk in chunks:
            yield chunk


def file_response(request, stream: Callable[[int, int], AsyncGenerator[bytes, None]], name: str, size: int):
    """The file (or the asked range of it) as an attachment; `stream(start, length)` yields its bytes. A HEAD
    request (a download manager's first question) gets the headers alone: nothing is read on the cluster."""
    wanted = parse_range(request.headers.get("Range", ""), size)
    if wanted is False:
        response: HttpResponseBase = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return response
    start, length = wanted or (0, size)
    status = 206 if wanted else 200
    if request.method == "HEAD":
        response = HttpResponse(status=status, content_type="application/octet-stream")
    else:
        response = ClosedWhenLeft(stream(start, length), status=status, content_type="application/octet-stream")
    response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    if wanted:
        response["Content-Range"] = f"bytes {start}-{start + length - 1}/{size}"
    response["Content-Disposition"] = content_disposition_header(True, name) or "attachment"
    return response


def archive_response(request, make: Callable[[], Iterator[bytes]], name: str, fmt: str):
    content_type = "application/zip" if fmt == "zip" else "application/x-tar"
    response: HttpResponseBase
    if request.method == "HEAD":
        response = HttpResponse(content_type=content_type)
    else:
        response = ClosedWhenLeft(_in_threads(make), content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, f"{name}.{fmt}") or "attachment"
    return response
