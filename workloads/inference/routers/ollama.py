"""The Ollama dialect: POST /api/generate and /api/chat (an NDJSON stream unless "stream": false, its last object
`"done": true` with Ollama's counts in nanoseconds), GET /api/tags. What `ollama` clients and the seed lab's
`curl … | jq -r .response` read.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated, Any

from dependencies import ReadyEngine, ServerState, checked_body, ready_engine
from engine import Event
from engine import Request as Generation
from fastapi import APIRouter, Depends
from generation import CHAT_STOP, chat_prompt, event_batches, full_text, sampling, start
from schemas import OllamaChat, OllamaGenerate
from state import State
from streaming import ndjson

router = APIRouter(prefix="/api", tags=["ollama"])
GenerateBody = Annotated[OllamaGenerate, Depends(checked_body(OllamaGenerate))]
ChatBody = Annotated[OllamaChat, Depends(checked_body(OllamaChat))]


@router.post("/generate")
async def generate(body: GenerateBody, engine: ReadyEngine, state: ServerState):
    prompt = f"{body.system}\n{body.prompt}" if body.system else body.prompt
    generation = start(engine, state.metrics, prompt, sampling(body.options.num_predict, body.options))
    state.metrics.requests.labels(api="ollama", status="200").inc()
    base = {"model": body.model}

    def render(event: Event) -> dict:
        if event.kind == "token":
            return {**base, "created_at": now_rfc3339(), "response": event.text, "done": False}
        return {**base, "created_at": now_rfc3339(), "response": "", "done": True, **counts(state, generation)}

    if body.stream:
        return ndjson(event_batches(generation, state.metrics), render)
    text = await full_text(generation, state.metrics)
    return {**base, "created_at": now_rfc3339(), "response": text, "done": True, **counts(state, generation)}


@router.post("/chat")
async def chat(body: ChatBody, engine: ReadyEngine, state: ServerState):
    options = sampling(body.options.num_predict, body.options)
    options.stop = options.stop or list(CHAT_STOP)
    generation = start(engine, state.metrics, chat_prompt(body.messages), options)
    state.metrics.requests.labels(api="ollama", status="200").inc()
    base = {"model": body.model}

    def render(event: Event) -> dict:
        message = {"role": "assistant", "content": event.text}
        done = {"done": False} if event.kind == "token" else {"done": True, **counts(state, generation)}
        return {**base, "created_at": now_rfc3339(), "message": message, **done}

    if body.stream:
        return ndjson(event_batches(generation, state.metrics), render)
    message = {"role": "assistant", "content": await full_text(generation, state.metrics)}
    return {**base, "created_at": now_rfc3339(), "message": message, "done": True, **counts(state, generation)}


@router.get("/tags", dependencies=[Depends(ready_engine)])
async def tags(state: ServerState):
    modified = (state.loaded_at or datetime.now(UTC)).isoformat().replace("+00:00", "Z")
    details = {"format": "pytorch", "family": "tinylm", "parameter_size": "", "quantization_level": "F32"}
    model = {
        "name": f"{state.model_name}:latest",
        "model": f"{state.model_name}:latest",
        "modified_at": modified,
        "size": state.size_bytes,
        "digest": "",
        "details": details,
    }
    return {"models": [model]}


def counts(state: State, generation: Generation) -> dict[str, Any]:
    """Ollama's closing figures: durations in nanoseconds, prompt and answer lengths in tokens (bytes here)."""
    end = generation.finished_at or time.monotonic()
    first = generation.first_token_at or end
    return {
        "done_reason": generation.finish_reason,
        "total_duration": int((end - generation.submitted_at) * 1e9),
        "load_duration": int(state.load_seconds * 1e9),
        "prompt_eval_count": len(generation.prompt_ids),
        "prompt_eval_duration": int((first - generation.submitted_at) * 1e9),
        "eval_count": len(generation.generated),
        "eval_duration": int((end - first) * 1e9),
    }


def now_rfc3339() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")
