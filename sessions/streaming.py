"""Sending files and archives to the browser: HTTP ranges, and cluster reads turned into an async stream.

Invariant: the response is produced chunk by chunk while it is sent (uvicorn reads an async iterator), so a large
file or folder is never held whole in memory; the SFTP channel, or OpenSSH's client, closes when the download ends
or is abandoned. At most GPULAB_FILES_OPENSSH_DOWNLOADS downloads per web process run an OpenSSH client (each a
login on the cluster); more go over the pooled SFTP connection.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator
from typing import Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.utils.http import content_disposition_header

from clusters.backends.base import BackendError

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


async def _in_threads(make: Callable[[], Generator[bytes, None, None]]) -> AsyncGenerator[bytes, None]:
    # Blocking SFTP reads run in worker threads, not the thread Django keeps for ORM code.
    iterator = await sync_to_async(make, thread_sensitive=False)()
    try:
        while True:
            chunk = await sync_to_async(lambda: next(iterator, None), thread_sensitive=False)()
            if chunk is None:
                return
            if chunk:
                yield chunk
    finally:
        await sync_to_async(iterator.close, thread_sensitive=False)()


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
) -> AsyncIterator[bytes]:
    """The bytes [start, start+length): fast()'s (OpenSSH) while a slot is free, else slow(start, length)'s (the
    pooled SFTP connection, in threads). Should OpenSSH fail part way (a login refused, a dropped connection), the
    rest comes by SFTP from where it stopped: the status and Content-Length are already sent."""
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


def file_response(request, stream: Callable[[int, int], AsyncIterator[bytes]], name: str, size: int):
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
        response = StreamingHttpResponse(stream(start, length), status=status, content_type="application/octet-stream")
    response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    if wanted:
        response["Content-Range"] = f"bytes {start}-{start + length - 1}/{size}"
    response["Content-Disposition"] = content_disposition_header(True, name) or "attachment"
    return response


def archive_response(request, make: Callable[[], Generator[bytes, None, None]], name: str, fmt: str):
    content_type = "application/zip" if fmt == "zip" else "application/x-tar"
    response: HttpResponseBase
    if request.method == "HEAD":
        response = HttpResponse(content_type=content_type)
    else:
        response = StreamingHttpResponse(_in_threads(make), content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, f"{name}.{fmt}") or "attachment"
    return response
