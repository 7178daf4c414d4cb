"""A client's resync, {"resync": <t of the last frame it holds>}: read with care, answered in bounded pieces, at most
once a second per socket.

The value comes from the browser, so anyone may send anything: ``1e400`` (infinity), ``NaN``, a string, a negative
number or one with 400 digits is either refused (nothing is answered, the socket stays open) or clamped into the
last ``WINDOW_SECONDS``. One answer holds at most ``MAX_FRAMES`` frames, the newest after that time: ``0`` no
longer returns the whole ring. A gap longer than the window stays a gap in the live chart (a reload draws the
whole history). Requests that arrive within ``INTERVAL_SECONDS`` of the last answer are coalesced into one answer,
sent when the interval is over, from the earliest time asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Awaitable, Callable

WINDOW_SECONDS = 60  # a resync answers frames from at most the last minute
MAX_FRAMES = 120  # ... and at most this many of them, the newest
INTERVAL_SECONDS = 1.0  # one answer per socket per second at most


def requested_after(text: str | None, *, now_ms: int | None = None, window_seconds: int = WINDOW_SECONDS) -> int | None:
    """The time (ms) after which the client wants frames, clamped into the window; None when it asks nothing."""
    try:
        value = json.loads(text or "{}")["resync"]
    except (ValueError, KeyError, TypeError, IndexError, RecursionError):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    return max(now_ms - window_seconds * 1000, min(int(value), now_ms))


class Coalescer:
    """Calls ``answer(after_ms)`` for the requests asked, at most once per ``interval`` seconds; requests that arrive
    meanwhile wait and are answered together, from the earliest time asked."""

    def __init__(self, answer: Callable[[int], Awaitable[None]], interval: float = INTERVAL_SECONDS) -> None:
        self._answer, self._interval = answer, interval
        self._after: int | None = None
        self._task: asyncio.Task | None = None
        self._next = 0.0

    def ask(self, after_ms: int) -> None:
        self._after = after_ms if self._after is None else min(self._after, after_ms)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._after is not None:
            delay = self._next - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            after, self._after = self._after, None
            self._next = loop.time() + self._interval
            await self._answer(after)

    async def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
