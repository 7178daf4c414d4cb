"""Files (WhiteNoise's static files among them) streamed under ASGI in 1 MiB reads, never read whole first.

WhiteNoise's middleware answers with a FileResponse, whose body is a synchronous iterator, and under ASGI Django reads
such an iterator whole, in one thread, before it sends a byte: 16 browsers fetching a 64 MB file cost the web process
a gigabyte (bench/static_files.py). The portal's ASGI handler sends a FileResponse's file as an asynchronous body
instead, read in 1 MiB blocks each in a thread, and closed as soon as the browser leaves. Django's test client and a
WSGI server do not pass through it: there the iterator is already read as it is sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import IO

from django.core.handlers.asgi import ASGIHandler
from django.http import FileResponse

from core.http_streams import ClosedWhenLeft

BLOCK = 2**20  # far fewer hops to a thread and ASGI messages than 8 KiB reads, and still little memory per browser


class StreamingFilesHandler(ASGIHandler):
    async def send_response(self, response, send):
        return await super().send_response(streamed(response), send)


def streamed(response):
    """A FileResponse's file as an asynchronous body in blocks; any other response as it is. The handler still closes
    the original response (and with it the file) once the body is sent."""
    opened = getattr(response, "file_to_stream", None)
    if not isinstance(response, FileResponse) or response.is_async or opened is None:
        return response  # not a file, already asynchronous, or without a body (HEAD, 304)
    body = ClosedWhenLeft(_blocks(opened), status=response.status_code)
    del body["Content-Type"]  # the file's own headers follow, its type among them
    for header, value in response.items():
        body[header] = value
    body.cookies = response.cookies
    return body


async def _blocks(opened: IO[bytes]) -> AsyncGenerator[bytes, None]:
    try:
        while chunk := await asyncio.to_thread(opened.read, BLOCK):
            yield chunk
    finally:
        opened.close()
