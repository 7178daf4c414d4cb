"""Serve a trainer checkpoint over the Ollama and OpenAI HTTP APIs, with dynamic batching.

    python server.py --checkpoint runs/1234 --port 11434 [--model-name tinylm]

Ollama:  POST /api/generate, POST /api/chat (NDJSON stream by default, "stream": false for one object), GET /api/tags
OpenAI:  POST /v1/completions, POST /v1/chat/completions (SSE with "stream": true), GET /v1/models
Ops:     GET /healthz (503 until the model is loaded), GET /metrics (Prometheus)

The server starts at once and loads the checkpoint in the background; if the directory has no model.pt
yet (training still running, a volume being filled), it waits for one and answers 503 meanwhile.

Where to read on: `routers/` holds one router per dialect; `dependencies.py` what routes receive (state, engine,
checked body); `generation.py` a request's life; `streaming.py` NDJSON and SSE; `errors.py` how refusals read;
`state.py` the loading; `engine.py` the batching itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path

import errors
import torch
from fastapi import FastAPI
from routers import ollama, openai, ops
from state import State


def create_app(state: State) -> FastAPI:
    """The app serving `state`: loading starts with the app, the engine stops with it."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        threading.Thread(target=state.load, name="loader", daemon=True).start()
        yield
        if state.engine:
            state.engine.stop()

    app = FastAPI(title="GPU Lab inference server", lifespan=lifespan)
    app.state.server = state
    errors.install(app)
    for router in (ollama.router, openai.router, ops.router):
        app.include_router(router)
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
