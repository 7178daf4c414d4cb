"""One request's generation from admission to its last event, in terms both API dialects share.

`start` admits a prompt (not empty, shorter than the context, a sane number of tokens) and hands it to the
engine; `event_batches` follows it, batching what has piled up while the client was slow. When the stream
ends, a finished generation is counted in the metrics; one whose client went away is cancelled, so the engine
frees its slot at the next step.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator

from engine import Engine, Event, Sampling
from engine import Request as Generation
from errors import APIError
from metrics import Metrics
from schemas import Message, OpenAICompletion, Options

MAX_NEW_TOKENS = int(os.environ.get("MAX_NEW_TOKENS", "2048"))
CHAT_STOP = ["\nUser:"]  # a chat answer ends where the transcript would give the user the next turn


def chat_prompt(messages: list[Message]) -> str:
    """A plain transcript the byte model continues: "User: …\\nAssistant:"."""
    lines = [f"{m.role.strip().capitalize() or 'User'}: {m.content}" for m in messages]
    return "\n".join(lines) + "\nAssistant:"


def sampling(max_tokens: int, knobs: Options | OpenAICompletion) -> Sampling:
    """The knobs both dialects name alike (temperature, top_p, seed, stop); only the length has two names."""
    stop = _stops(knobs.stop)
    return Sampling(max_tokens=max_tokens, temperature=knobs.temperature, top_p=knobs.top_p, seed=knobs.seed, stop=stop)


def _stops(value: list[str] | str | None) -> list[str]:
    if value is None:
        return []
    values = [value] if isinstance(value, str) else value
    return [v for v in values if v][:4]


def start(engine: Engine, metrics: Metrics, prompt: str, sampling: Sampling) -> Generation:
    data = prompt.encode()
    if not data:
        raise APIError(400, "the prompt is empty")
    if len(data) >= engine.block_size:
        raise APIError(
            400,
            f"the prompt is {len(data)} bytes; the model's context is {engine.block_size}, "
            "so it must be shorter to leave room for an answer",
        )
    if not 1 <= sampling.max_tokens <= MAX_NEW_TOKENS:
        raise APIError(400, f"ask for between 1 and {MAX_NEW_TOKENS} tokens, not {sampling.max_tokens}")
    generation = Generation(data, sampling, asyncio.get_running_loop())
    metrics.prompt.inc(len(data))
    engine.submit(generation)
    metrics.queued.set(engine.queued())
    return generation


async def event_batches(generation: Generation, metrics: Metrics) -> AsyncIterator[list[Event]]:
    """Events as they come; when the client is behind, everything already waiting goes out in one write."""
    try:
        while True:
            batch = [await generation.events.get()]
            while not generation.events.empty():
                batch.append(generation.events.get_nowait())
            yield batch
            if batch[-1].kind == "done":
                break
    finally:
        if generation.finished_at is None:
            generation.cancelled = True  # the client went away
        else:
            _count_finished(generation, metrics)


async def full_text(generation: Generation, metrics: Metrics) -> str:
    """The whole answer, for a client that asked for one object rather than a stream."""
    return "".join([e.text async for batch in event_batches(generation, metrics) for e in batch if e.kind == "token"])


def _count_finished(generation: Generation, metrics: Metrics) -> None:
    count = len(generation.generated)
    metrics.generated.inc(count)
    if generation.first_token_at:
        metrics.ttft.observe(generation.first_token_at - generation.submitted_at)
        decode = (generation.finished_at or time.monotonic()) - generation.first_token_at
        if count > 1 and decode > 0:
            metrics.tokens_per_second.observe((count - 1) / decode)
