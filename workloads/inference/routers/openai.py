"""The OpenAI dialect: POST /v1/completions and /v1/chat/completions (one object, or SSE chunks with
"stream": true ending in `data: [DONE]`), GET /v1/models. What the `openai` client, vLLM's benchmark and
`loadgen.py --api openai` read.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Annotated

from dependencies import ReadyEngine, ServerState, checked_body, ready_engine
from engine import Event
from engine import Request as Generation
from fastapi import APIRouter, Depends
from generation import CHAT_STOP, chat_prompt, event_batches, full_text, sampling, start
from schemas import OpenAIChat, OpenAICompletion
from streaming import sse

router = APIRouter(prefix="/v1", tags=["openai"])
CompletionBody = Annotated[OpenAICompletion, Depends(checked_body(OpenAICompletion))]
ChatBody = Annotated[OpenAIChat, Depends(checked_body(OpenAIChat))]


@router.post("/completions")
async def completions(body: CompletionBody, engine: ReadyEngine, state: ServerState):
    prompt = body.prompt if isinstance(body.prompt, str) else "".join(body.prompt[:1])
    generation = start(engine, state.metrics, prompt, sampling(body.max_tokens, body))
    state.metrics.requests.labels(api="openai", status="200").inc()
    ident, created = f"cmpl-{uuid.uuid4().hex[:24]}", int(time.time())
    base = {"id": ident, "object": "text_completion", "created": created, "model": body.model}

    def render(event: Event) -> dict:
        reason = event.reason if event.kind == "done" else None
        return {**base, "choices": [{"text": event.text, "index": 0, "logprobs": None, "finish_reason": reason}]}

    if body.stream:
        return sse(event_batches(generation, state.metrics), render)
    text = await full_text(generation, state.metrics)
    choice = {"text": text, "index": 0, "logprobs": None, "finish_reason": generation.finish_reason}
    return {**base, "choices": [choice], "usage": usage(generation)}


@router.post("/chat/completions")
async def chat_completions(body: ChatBody, engine: ReadyEngine, state: ServerState):
    options = sampling(body.max_tokens, body)
    options.stop = options.stop or list(CHAT_STOP)
    generation = start(engine, state.metrics, chat_prompt(body.messages), options)
    state.metrics.requests.labels(api="openai", status="200").inc()
    ident, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
    base = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": body.model}

    def render(event: Event) -> dict:
        if event.kind == "token":
            return {**base, "choices": [{"index": 0, "delta": {"content": event.text}, "finish_reason": None}]}
        return {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": event.reason}]}

    if body.stream:
        first = {**base, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
        return sse(event_batches(generation, state.metrics), render, first)
    message = {"role": "assistant", "content": await full_text(generation, state.metrics)}
    return {
        **base,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": generation.finish_reason}],
        "usage": usage(generation),
    }


@router.get("/models", dependencies=[Depends(ready_engine)])
async def models(state: ServerState):
    created = int((state.loaded_at or datetime.now(UTC)).timestamp())
    return {
        "object": "list",
        "data": [{"id": state.model_name, "object": "model", "created": created, "owned_by": "gpulab"}],
    }


def usage(generation: Generation) -> dict[str, int]:
    prompt, completion = len(generation.prompt_ids), len(generation.generated)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
