"""Static files: ServeStatic's middleware (WhiteNoise's maintained fork, async under ASGI), streaming each file in
1 MiB reads.

Under ASGI, Django reads a response's synchronous iterator whole, in one thread, before its first byte: WhiteNoise's
middleware served a 64 MB file that way, 1 GB of memory for 16 clients at once. ServeStatic's response iterates
asynchronously, but in 8 KiB blocks, each a hop to the file's thread and an ASGI message of its own: 18 s for that
file on the development machine. The same response in 1 MiB blocks takes 0.2 s (bench/static_files.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from django.http import HttpRequest
from servestatic.middleware import AsyncServeStaticFileResponse, ServeStaticMiddleware
from servestatic.responders import AsyncSlicedFile, Redirect, StaticFile
from servestatic.utils import AsyncFile, EmptyAsyncIterator

BLOCK = 1024 * 1024


class StaticFilesMiddleware(ServeStaticMiddleware):
    @staticmethod
    async def aserve(static_file: StaticFile | Redirect, request: HttpRequest) -> AsyncServeStaticFileResponse:
        served = await static_file.aget_response(request.method or "GET", request.META)
        body = _blocks(served.file) if served.file is not None else EmptyAsyncIterator()
        response = AsyncServeStaticFileResponse(body, status=int(served.status))
        del response["content-type"]  # the file's own headers follow, its type among them
        for key, value in served.headers:
            if value is not None:
                response[key] = value
        return response


async def _blocks(file: AsyncFile | AsyncSlicedFile) -> AsyncIterator[bytes]:
    async with file as opened:
        while chunk := await opened.read(BLOCK):
            yield chunk
