"""Streaming responses whose generator ends as soon as the browser leaves.

Django's ASGI handler closes (aclosing) what a streaming response's `__aiter__` gives it, but the stock response gives
a wrapper that does not close the generator behind it, and a request cancelled by a disconnect never reaches
response.close(): the generator's `finally` (a file closed, a slot given back, an SFTP channel ended) would wait for
the garbage collector. ClosedWhenLeft hands the handler a wrapper that closes the generator it wraps.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

from django.http import StreamingHttpResponse


class ClosedWhenLeft(StreamingHttpResponse):
    def __init__(self, chunks: AsyncGenerator[bytes, None], **kwargs) -> None:
        super().__init__(chunks, **kwargs)
        self._chunks = chunks

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._closing()

    async def _closing(self) -> AsyncGenerator[bytes, None]:
        async with contextlib.aclosing(self._chunks) as chunks:
            async for chunk in chunks:
                yield self.make_bytes(chunk)
