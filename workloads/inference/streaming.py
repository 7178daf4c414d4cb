"""The two streaming wire formats: NDJSON (Ollama: one JSON object a line) and SSE (OpenAI: `data: …` events
ending with `data: [DONE]`). A route says how one event reads in its dialect; these write the stream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from engine import Event
from fastapi.responses import StreamingResponse

Render = Callable[[Event], dict[str, Any]]
Batches = AsyncIterator[list[Event]]


def ndjson(batches: Batches, render: Render) -> StreamingResponse:
    async def body():
        async for batch in batches:
            yield "".join(json.dumps(render(event)) + "\n" for event in batch)

    return StreamingResponse(body(), media_type="application/x-ndjson")


def sse(batches: Batches, render: Render, first: dict[str, Any] | None = None) -> StreamingResponse:
    async def body():
        if first is not None:
            yield f"data: {json.dumps(first)}\n\n"
        async for batch in batches:
            yield "".join(f"data: {json.dumps(render(event))}\n\n" for event in batch)
        yield "data: [DONE]\n\n"

    return StreamingResponse(body(), media_type="text/event-stream")
