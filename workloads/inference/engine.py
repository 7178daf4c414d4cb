"""The decoding engine: requests that arrive close together decode together.

A background thread owns the model. It waits up to --max-wait-ms to gather a batch (at most --max-batch),
then advances every active request by one byte per step; requests that arrive meanwhile join at the next
step, finished ones leave. Sequences of different lengths are left-padded, each with its own positions and
a mask that hides the padding, so a request's output does not depend on what it was batched with: at
temperature 0 it equals the unbatched output. Batch size 1 takes the same path.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trainer"))
from model import ModelConfig, TinyLM


@dataclass
class Sampling:
    max_tokens: int = 128
    temperature: float = 0.8
    top_p: float = 1.0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)


@dataclass
class Event:
    kind: str  # "token" or "done"
    text: str = ""
    reason: str = ""


class Request:
    """One generation; the engine thread posts its events to the asyncio loop that asked."""

    def __init__(self, prompt: bytes, sampling: Sampling, loop: asyncio.AbstractEventLoop):
        self.prompt_ids = list(prompt)
        self.sampling = sampling
        self.loop = loop
        self.events: asyncio.Queue[Event] = asyncio.Queue()
        self.generated: list[int] = []
        self.text = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.generator = torch.Generator().manual_seed(sampling.seed) if sampling.seed is not None else None
        self.submitted_at = time.monotonic()
        self.first_token_at: float | None = None
        self.finished_at: float | None = None
        self.finish_reason = ""
        self.cancelled = False

    def post(self, event: Event) -> None:
        self.loop.call_soon_threadsafe(self.events.put_nowait, event)


class Engine:
    def __init__(
        self, model: TinyLM, device: torch.device, *, max_batch: int = 16, max_wait_ms: float = 5.0, on_step=None
    ):
        self.model = model.eval()
        self.device = device
        self.block_size = model.config.block_size
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000
        self.on_step = on_step or (lambda batch_size: None)
        self._pending: queue.Queue[Request] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="decode", daemon=True)
        self._stopping = False
        self._thread.start()

    def submit(self, request: Request) -> None:
        self._pending.put(request)

    def queued(self) -> int:
        return self._pending.qsize()

    def stop(self) -> None:
        self._stopping = True

    def _run(self) -> None:
        active: list[Request] = []
        while not self._stopping:
            if not active:
                try:
                    active.append(self._pending.get(timeout=0.1))
                except queue.Empty:
                    continue
                deadline = time.monotonic() + self.max_wait  # a bounded wait to fill the batch
                while len(active) < self.max_batch:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    try:
                        active.append(self._pending.get(timeout=remaining))
                    except queue.Empty:
                        break
            while len(active) < self.max_batch:  # newcomers join at the step boundary
                try:
                    active.append(self._pending.get_nowait())
                except queue.Empty:
                    break
            active = [r for r in active if not r.cancelled]
            if active:
                self._step(active)
                active = [r for r in active if r.finished_at is None]

    @torch.inference_mode()
    def _step(self, batch: list[Request]) -> None:
        self.on_step(len(batch))
        contexts = [(r.prompt_ids + r.generated)[-self.block_size :] for r in batch]
        length = max(len(c) for c in contexts)
        pads = torch.tensor([length - len(c) for c in contexts], device=self.device)
        idx = torch.tensor([[0] * (length - len(c)) + c for c in contexts], device=self.device)
        steps = torch.arange(length, device=self.device)
        positions = (steps.unsqueeze(0) - pads.unsqueeze(1)).clamp(min=0)
        keys_real = steps.unsqueeze(0) >= pads.unsqueeze(1)  # B x L
        causal = steps.unsqueeze(1) >= steps.unsqueeze(0)  # L x L
        mask = causal.unsqueeze(0) & keys_real.unsqueeze(1)
        mask |= torch.eye(length, dtype=torch.bool, device=self.device).unsqueeze(0)  # padding rows see themselves
        logits, _ = self.model(idx, positions=positions, attn_mask=mask.unsqueeze(1))
        last = logits[:, -1, :].float().cpu()
        for request, row in zip(batch, last, strict=True):
            self._emit(request, _sample(row, request))

    def _emit(self, request: Request, token: int) -> None:
        now = time.monotonic()
        if request.first_token_at is None:
            request.first_token_at = now
        request.generated.append(token)
        piece = request.decoder.decode(bytes([token]))  # "" while a multi-byte character is incomplete
        reason = ""
        before = len(request.text)
        request.text += piece
        for stop in request.sampling.stop:
            cut = request.text.find(stop, max(0, before - len(stop)))
            if cut != -1:
                piece = request.text[before:cut] if cut >= before else ""
                request.text = request.text[:cut]
                reason = "stop"
                break
        if not reason or piece:
            request.post(Event("token", piece))  # one event per token, so clients can count them
        if not reason and len(request.generated) >= request.sampling.max_tokens:
            tail = request.decoder.decode(b"", final=True)
            if tail:
                request.text += tail
                request.post(Event("token", tail))
            reason = "length"
        if reason:
            request.finish_reason = reason
            request.finished_at = now
            request.post(Event("done", reason=reason))


def _sample(logits: torch.Tensor, request: Request) -> int:
    sampling = request.sampling
    if sampling.temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / sampling.temperature, dim=-1)
    if sampling.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < sampling.top_p
        filtered = torch.zeros_like(probs)
        filtered[order[keep]] = sorted_probs[keep]
        probs = filtered / filtered.sum()
    return int(torch.multinomial(probs, 1, generator=request.generator))


def load_model(checkpoint_dir: Path, device: torch.device) -> TinyLM:
    """model.pt + config.json as the trainer writes them."""
    config = json.loads((checkpoint_dir / "config.json").read_text())["model"]
    model = TinyLM(ModelConfig(**config))
    state = torch.load(checkpoint_dir / "model.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    return model.to(device).eval()
