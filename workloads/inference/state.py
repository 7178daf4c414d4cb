"""What the server knows between requests: the checkpoint it serves, the engine once loaded, and its metrics.

The server answers at once and loads in the background (`State.load` runs on a thread), so the engine is None
until the checkpoint is there and loaded; `/healthz` says 503 meanwhile and generating endpoints refuse with 503.
A checkpoint that fails to load keeps the server up with the reason in `error`, for `/healthz` to show.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import torch
from engine import Engine, load_model
from metrics import Metrics


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

    def serves(self, name: str) -> bool:
        """Whether a request's model name is this server's ("tinylm" and "tinylm:latest" both are)."""
        return name.split(":")[0] == self.model_name
