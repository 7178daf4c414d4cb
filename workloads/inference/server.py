"""Serve a trainer checkpoint over the Ollama and OpenAI HTTP APIs, with dynamic batching.

    python server.py --checkpoint runs/1234 --port 11434 [--model-name tinylm]

Ollama:  POST /api/generate, POST /api/chat (NDJSON stream by default, "stream": false for one object), GET /api/tags
OpenAI:  POST /v1/completions, POST /v1/chat/completions (SSE with "stream": true), GET /v1/models
Ops:     GET /healthz (503 until the model is loaded), GET /metrics (Prometheus)

The server starts at once and loads the checkpoint in the background; if the directory has no model.pt
yet (training still running, a volume being filled), it waits for one and answers 503 meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from engine import Engine, Event, Sampling, load_model
from engine import Request as Generation
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from metrics import Metrics
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, ValidationError
from schemas import Message, OllamaChat, OllamaGenerate, OpenAIChat, OpenAICompletion, Options

MAX_NEW_TOKENS = int(os.environ.get("MAX_NEW_TOKENS", "2048"))


class State:
    def __init__(self, checkpoint: Path, model_name: str, device: str, max_batch: int, max_wait_ms: float):
        self.checkpoint, self.model_name = checkpoint, model_name
        self.device = torch.device(
            "cuda" if device == "auto" and torch.cuda.is_available() else ("cpu" if device == "auto" else device)
        )
        self.max_batch, self.max_wait_ms = max_batch, max_wait_ms
        self.engine: Engine | None = None
        self.block_size = 0
        self.load_seconds = 0.0
        self.loaded_at: datetime | None = None
        self.error = ""
        self.metrics = Metrics()
        self.size_bytes = 0

    def load(self) -> None:
        while not (self.checkpoint / "model.pt").exists() or not (self.checkpoint / "config.json").exists():
            time.sleep(1.0)  # training may still be writing it
        started = time.monotonic()
        try:
            model = load_model(self.checkpoint, self.device)
        except Exception as exc:  # a broken checkpoint keeps the server up, reporting why
            self.error = f"cannot load {self.checkpoint}: {exc}"
            return
        self.block_size = model.config.block_size
        self.size_bytes = (self.checkpoint / "model.pt").stat().st_size
        self.load_seconds = time.monotonic() - started
        self.loaded_at = datetime.now(UTC)
        self.engine = Engine(
            model,
            self.device,
            max_batch=self.max_batch,
            max_wait_ms=self.max_wait_ms,
            on_step=self.metrics.batch_size.observe,
        )


class APIError(Exception):
    def __init__(self, status: int, message: str, code: str = "invalid_request_error"):
        self.status, self.message, self.code = status, message, code


# -- helpers -----------------------------------------------------------------------------------------------------
def chat_prompt(messages: list[Message]) -> str:
    """A plain transcript the byte model continues: "User: …\\nAssistant:"."""
    lines = [f"{m.role.strip().capitalize() or 'User'}: {m.content}" for m in messages]
    return "\n".join(lines) + "\nAssistant:"


def stops(value: list[str] | str | None) -> list[str]:
    if value is None:
        return []
    values = [value] if isinstance(value, str) else value
    return [v for v in values if v][:4]


def _first_error(errors) -> str:
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    return f"{where + ': ' if where else ''}{first.get('msg', 'invalid request')}"


async def parse(request: Request, schema: type[BaseModel]):
    """The JSON body, whatever Content-Type the client sent (curl -d sends a form type; Ollama accepts it)."""
    try:
        data = json.loads(await request.body() or b"{}")
    except ValueError:
        raise APIError(400, "the request body is not valid JSON") from None
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise APIError(400, _first_error(exc.errors())) from None


def now_rfc3339() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def create_app(state: State) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        threading.Thread(target=state.load, name="loader", daemon=True).start()
        yield
        if state.engine:
            state.engine.stop()

    app = FastAPI(title="GPU Lab inference server", lifespan=lifespan)

    @app.exception_handler(APIError)
    async def api_error(request: Request, exc: APIError):
        return _error(request, exc.status, exc.message, exc.code)

    @app.exception_handler(RequestValidationError)
    async def bad_body(request: Request, exc: RequestValidationError):
        return _error(request, 400, _first_error(exc.errors()))

    def _error(request: Request, status: int, message: str, code: str = "invalid_request_error") -> JSONResponse:
        api = "openai" if request.url.path.startswith("/v1/") else "ollama"
        state.metrics.requests.labels(api=api, status=str(status)).inc()
        if api == "openai":
            return JSONResponse({"error": {"message": message, "type": code, "param": None, "code": None}}, status)
        return JSONResponse({"error": message}, status)

    def ready_engine() -> Engine:
        if state.engine is None:
            raise APIError(503, state.error or "the model is still loading; try again in a moment", "unavailable")
        return state.engine

    def check_model(name: str) -> None:
        if name.split(":")[0] != state.model_name:
            raise APIError(404, f"model '{name}' not found; this server serves '{state.model_name}'", "not_found")

    def start(prompt: str, sampling: Sampling) -> Generation:
        engine = ready_engine()
        data = prompt.encode()
        if not data:
            raise APIError(400, "the prompt is empty")
        if len(data) >= state.block_size:
            raise APIError(
                400,
                f"the prompt is {len(data)} bytes; the model's context is {state.block_size}, "
                "so it must be shorter to leave room for an answer",
            )
        if not 1 <= sampling.max_tokens <= MAX_NEW_TOKENS:
            raise APIError(400, f"ask for between 1 and {MAX_NEW_TOKENS} tokens, not {sampling.max_tokens}")
        generation = Generation(data, sampling, asyncio.get_running_loop())
        state.metrics.prompt.inc(len(data))
        engine.submit(generation)
        state.metrics.queued.set(engine.queued())
        return generation

    async def events(generation: Generation) -> AsyncIterator[Event]:
        async for batch in event_batches(generation):
            for event in batch:
                yield event

    async def event_batches(generation: Generation) -> AsyncIterator[list[Event]]:
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
                finished(generation)

    def finished(generation: Generation) -> None:
        count = len(generation.generated)
        state.metrics.generated.inc(count)
        if generation.first_token_at:
            state.metrics.ttft.observe(generation.first_token_at - generation.submitted_at)
            decode = (generation.finished_at or time.monotonic()) - generation.first_token_at
            if count > 1 and decode > 0:
                state.metrics.tokens_per_second.observe((count - 1) / decode)

    def ollama_counts(generation: Generation) -> dict[str, Any]:
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

    def usage(generation: Generation) -> dict[str, int]:
        prompt, completion = len(generation.prompt_ids), len(generation.generated)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def ndjson(generation: Generation, render) -> StreamingResponse:
        async def body():
            async for batch in event_batches(generation):
                yield "".join(json.dumps(render(event)) + "\n" for event in batch)

        return StreamingResponse(body(), media_type="application/x-ndjson")

    def sse(generation: Generation, render, first: dict | None = None) -> StreamingResponse:
        async def body():
            if first is not None:
                yield f"data: {json.dumps(first)}\n\n"
            async for batch in event_batches(generation):
                yield "".join(f"data: {json.dumps(render(event))}\n\n" for event in batch)
            yield "data: [DONE]\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    # -- Ollama --------------------------------------------------------------------------------------------------
    def ollama_sampling(options: Options) -> Sampling:
        return Sampling(
            max_tokens=options.num_predict,
            temperature=options.temperature,
            top_p=options.top_p,
            seed=options.seed,
            stop=stops(options.stop),
        )

    @app.post("/api/generate")
    async def generate(request: Request):
        body = await parse(request, OllamaGenerate)
        check_model(body.model)
        prompt = f"{body.system}\n{body.prompt}" if body.system else body.prompt
        generation = start(prompt, ollama_sampling(body.options))
        state.metrics.requests.labels(api="ollama", status="200").inc()
        base = {"model": body.model}

        def render(event: Event) -> dict:
            if event.kind == "token":
                return {**base, "created_at": now_rfc3339(), "response": event.text, "done": False}
            return {**base, "created_at": now_rfc3339(), "response": "", "done": True, **ollama_counts(generation)}

        if body.stream:
            return ndjson(generation, render)
        text = "".join([e.text async for e in events(generation) if e.kind == "token"])
        return {**base, "created_at": now_rfc3339(), "response": text, "done": True, **ollama_counts(generation)}

    @app.post("/api/chat")
    async def chat(request: Request):
        body = await parse(request, OllamaChat)
        check_model(body.model)
        if not body.messages:
            raise APIError(400, "messages is empty")
        sampling = ollama_sampling(body.options)
        sampling.stop = sampling.stop or ["\nUser:"]
        generation = start(chat_prompt(body.messages), sampling)
        state.metrics.requests.labels(api="ollama", status="200").inc()
        base = {"model": body.model}

        def render(event: Event) -> dict:
            message = {"role": "assistant", "content": event.text}
            if event.kind == "token":
                return {**base, "created_at": now_rfc3339(), "message": message, "done": False}
            return {**base, "created_at": now_rfc3339(), "message": message, "done": True, **ollama_counts(generation)}

        if body.stream:
            return ndjson(generation, render)
        text = "".join([e.text async for e in events(generation) if e.kind == "token"])
        return {
            **base,
            "created_at": now_rfc3339(),
            "message": {"role": "assistant", "content": text},
            "done": True,
            **ollama_counts(generation),
        }

    @app.get("/api/tags")
    async def tags():
        ready_engine()
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

    # -- OpenAI --------------------------------------------------------------------------------------------------
    def openai_sampling(body: OpenAICompletion) -> Sampling:
        return Sampling(
            max_tokens=body.max_tokens,
            temperature=body.temperature,
            top_p=body.top_p,
            seed=body.seed,
            stop=stops(body.stop),
        )

    @app.post("/v1/completions")
    async def completions(request: Request):
        body = await parse(request, OpenAICompletion)
        check_model(body.model)
        prompt = body.prompt if isinstance(body.prompt, str) else "".join(body.prompt[:1])
        generation = start(prompt, openai_sampling(body))
        state.metrics.requests.labels(api="openai", status="200").inc()
        ident, created = f"cmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        base = {"id": ident, "object": "text_completion", "created": created, "model": body.model}

        def render(event: Event) -> dict:
            reason = event.reason if event.kind == "done" else None
            return {**base, "choices": [{"text": event.text, "index": 0, "logprobs": None, "finish_reason": reason}]}

        if body.stream:
            return sse(generation, render)
        text = "".join([e.text async for e in events(generation) if e.kind == "token"])
        choice = {"text": text, "index": 0, "logprobs": None, "finish_reason": generation.finish_reason}
        return {**base, "choices": [choice], "usage": usage(generation)}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        body = await parse(request, OpenAIChat)
        check_model(body.model)
        if not body.messages:
            raise APIError(400, "messages is empty")
        sampling = openai_sampling(body)
        sampling.stop = sampling.stop or ["\nUser:"]
        generation = start(chat_prompt(body.messages), sampling)
        state.metrics.requests.labels(api="openai", status="200").inc()
        ident, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())

        base = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": body.model}

        def render(event: Event) -> dict:
            if event.kind == "token":
                return {**base, "choices": [{"index": 0, "delta": {"content": event.text}, "finish_reason": None}]}
            return {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": event.reason}]}

        if body.stream:
            first = {**base, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
            return sse(generation, render, first)
        text = "".join([e.text async for e in events(generation) if e.kind == "token"])
        message = {"role": "assistant", "content": text}
        return {
            "id": ident,
            "object": "chat.completion",
            "created": created,
            "model": body.model,
            "choices": [{"index": 0, "message": message, "finish_reason": generation.finish_reason}],
            "usage": usage(generation),
        }

    @app.get("/v1/models")
    async def models():
        ready_engine()
        created = int((state.loaded_at or datetime.now(UTC)).timestamp())
        return {
            "object": "list",
            "data": [{"id": state.model_name, "object": "model", "created": created, "owned_by": "gpulab"}],
        }

    # -- operations ----------------------------------------------------------------------------------------------
    @app.get("/healthz")
    async def healthz():
        if state.engine is None:
            return JSONResponse({"status": "loading", "detail": state.error or "waiting for the checkpoint"}, 503)
        return {
            "status": "ok",
            "model": state.model_name,
            "device": state.device.type,
            "context": state.block_size,
            "max_batch": state.max_batch,
        }

    @app.get("/metrics")
    async def metrics():
        if state.engine:
            state.metrics.queued.set(state.engine.queued())
        return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--checkpoint",
        type=Path,
        default=Path(os.environ.get("MODEL_DIR", "/models")),
        help="directory with model.pt and config.json (env MODEL_DIR)",
    )
    parser.add_argument("--model-name", default=os.environ.get("MODEL_NAME", "tinylm"))
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "11434")))
    parser.add_argument("--device", default=os.environ.get("DEVICE", "auto"), choices=["auto", "cpu", "cuda"])
    parser.add_argument("--access-log", action="store_true", help="log every request (costs time under load)")
    parser.add_argument(
        "--threads",
        type=int,
        default=int(os.environ.get("TORCH_THREADS", "1")),
        help="CPU threads for PyTorch; one is fastest for small models",
    )
    parser.add_argument(
        "--max-batch",
        type=int,
        default=int(os.environ.get("MAX_BATCH", "16")),
        help="requests decoded together; 1 turns batching off",
    )
    parser.add_argument(
        "--max-wait-ms",
        type=float,
        default=float(os.environ.get("MAX_WAIT_MS", "5")),
        help="how long the first request of a batch waits for company",
    )
    args = parser.parse_args()
    torch.set_num_threads(max(1, args.threads))
    # The decode thread and the HTTP event loop share the GIL; a short switch interval keeps the loop's
    # replies (first tokens above all) from waiting behind a decode step.
    sys.setswitchinterval(0.001)
    state = State(args.checkpoint, args.model_name, args.device, args.max_batch, args.max_wait_ms)
    uvicorn.run(create_app(state), host=args.host, port=args.port, log_level="info", access_log=args.access_log)


if __name__ == "__main__":
    main()
