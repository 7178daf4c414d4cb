"""The decoding engine: requests that arrive close together decode together.

A background thread owns the model and a key/value cache with one slot per concurrent request. It waits up
to --max-wait-ms to gather a batch (at most --max-batch). A joining request is prefilled alone (its prompt
runs once and fills its slot); then every active request advances by one byte per step in a single forward
pass that reads each one's own cached keys and values under a mask. Requests that arrive meanwhile join at
the next step; finished ones free their slot. A request's output does not depend on what it was batched
with: at temperature 0 it equals the unbatched output (--max-batch 1 takes the same path).
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
import torch.nn.functional as F

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
        self.outbox: list[Event] = []  # events of the current step, delivered together
        self.slot = -1  # the KV-cache slot while decoding
        self.cache_len = 0

    def post(self, event: Event) -> None:
        self.outbox.append(event)


class KVCache:
    """Keys and values of every layer for up to max_batch requests, one slot each, preallocated."""

    def __init__(self, model: TinyLM, max_batch: int, device: torch.device):
        cfg = model.config
        shape = (cfg.n_layer, max_batch, cfg.n_head, cfg.block_size, cfg.n_embd // cfg.n_head)
        dtype = next(model.parameters()).dtype
        self.k = torch.zeros(shape, device=device, dtype=dtype)
        self.v = torch.zeros(shape, device=device, dtype=dtype)
        self.free = list(range(max_batch))


class Engine:
    def __init__(
        self, model: TinyLM, device: torch.device, *, max_batch: int = 16, max_wait_ms: float = 5.0, on_step=None
    ):
        self.model = model.eval()
        self.device = device
        self.block_size = model.config.block_size
        self.n_head = model.config.n_head
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000
        self.on_step = on_step or (lambda batch_size: None)
        self.cache = KVCache(model, max_batch, device)
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
            joining: list[Request] = []
            if not active:
                try:
                    joining.append(self._pending.get(timeout=0.1))
                except queue.Empty:
                    continue
                deadline = time.monotonic() + self.max_wait  # a bounded wait to fill the batch
                while len(joining) < self.max_batch:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    try:
                        joining.append(self._pending.get(timeout=remaining))
                    except queue.Empty:
                        break
            while len(active) + len(joining) < self.max_batch:  # newcomers join at the step boundary
                try:
                    joining.append(self._pending.get_nowait())
                except queue.Empty:
                    break
            joining = [r for r in joining if not r.cancelled]
            if joining:
                self._prefill(joining)
                self._deliver(joining)
                active.extend(joining)
            for request in [r for r in active if r.cancelled and r.finished_at is None]:
                request.finished_at = time.monotonic()
            active = self._release_finished(active)
            if active:
                self._decode(active)
                self._deliver(active)
                active = self._release_finished(active)

    @staticmethod
    def _deliver(requests: list[Request]) -> None:
        """Hand a step's events to the asyncio loops that wait for them: one wake-up per loop, not per token."""
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Queue, Event]]] = {}
        for request in requests:
            if request.outbox:
                by_loop.setdefault(request.loop, []).extend((request.events, e) for e in request.outbox)
                request.outbox = []
        for loop, items in by_loop.items():
            loop.call_soon_threadsafe(_put_all, items)

    def _release_finished(self, active: list[Request]) -> list[Request]:
        still = []
        for request in active:
            if request.finished_at is None:
                still.append(request)
            else:
                self.cache.free.append(request.slot)
        return still

    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:
        batch, length, width = t.shape
        return t.view(batch, length, self.n_head, width // self.n_head).transpose(1, 2)

    @torch.inference_mode()
    def _prefill(self, joining: list[Request]) -> None:
        """Run the newcomers' prompts in one pass, keep their keys and values in free slots, emit first tokens.

        Prompts are right-padded: the causal mask keeps every real byte from seeing the padding after it, and
        the padding's cached keys and values lie beyond each request's length, where decoding overwrites them.
        """
        model = self.model
        lengths = [len(r.prompt_ids) for r in joining]
        span = max(lengths)
        for request in joining:
            request.slot = self.cache.free.pop()
        slots = torch.tensor([r.slot for r in joining], device=self.device)
        idx = torch.tensor([r.prompt_ids + [0] * (span - len(r.prompt_ids)) for r in joining], device=self.device)
        x = model.tok_emb(idx) + model.pos_emb(torch.arange(span, device=self.device))
        for layer, block in enumerate(model.blocks):
            q, k, v = (self._split_heads(t) for t in block.attn.qkv(block.ln1(x)).split(x.shape[-1], dim=2))
            self.cache.k[layer, slots, :, :span] = k
            self.cache.v[layer, slots, :, :span] = v
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + block.attn.proj(y.transpose(1, 2).reshape(x.shape))
            x = x + block.mlp(block.ln2(x))
        last = x[torch.arange(len(joining)), torch.tensor(lengths) - 1]
        logits = model.head(model.ln_f(last)).float().cpu()
        for request, length, token in zip(joining, lengths, _sample_batch(logits, joining), strict=True):
            request.cache_len = length
            self._emit(request, token)
            if request.finished_at is None and request.cache_len >= self.block_size:
                self._finish(request, "length")

    @torch.inference_mode()
    def _decode(self, batch: list[Request]) -> None:
        """One new token for every active request, all in one forward pass over their cached contexts."""
        self.on_step(len(batch))
        model = self.model
        slots = torch.tensor([r.slot for r in batch], device=self.device)
        positions = torch.tensor([r.cache_len for r in batch], device=self.device)
        tokens = torch.tensor([[r.generated[-1]] for r in batch], device=self.device)
        span = int(positions.max()) + 1
        visible = torch.arange(span, device=self.device).unsqueeze(0) <= positions.unsqueeze(1)  # B x span
        mask = visible[:, None, None, :]
        x = model.tok_emb(tokens) + model.pos_emb(positions).unsqueeze(1)
        for layer, block in enumerate(model.blocks):
            q, k, v = (self._split_heads(t) for t in block.attn.qkv(block.ln1(x)).split(x.shape[-1], dim=2))
            self.cache.k[layer, slots, :, positions] = k[:, :, 0]
            self.cache.v[layer, slots, :, positions] = v[:, :, 0]
            keys = self.cache.k[layer, slots, :, :span]
            values = self.cache.v[layer, slots, :, :span]
            y = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
            x = x + block.attn.proj(y.transpose(1, 2).reshape(x.shape))
            x = x + block.mlp(block.ln2(x))
        logits = model.head(model.ln_f(x[:, 0])).float().cpu()
        for request, token in zip(batch, _sample_batch(logits, batch), strict=True):
            request.cache_len += 1
            self._emit(request, token)
            if request.finished_at is None and request.cache_len >= self.block_size:
                self._finish(request, "length")  # the context is full

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
            reason = "length"
        if reason:
            self._finish(request, reason)

    def _finish(self, request: Request, reason: str) -> None:
        tail = request.decoder.decode(b"", final=True)
        if tail and reason == "length":
            request.text += tail
            request.post(Event("token", tail))
        request.finish_reason = reason
        request.finished_at = time.monotonic()
        request.post(Event("done", reason=reason))


def _put_all(items: list[tuple[asyncio.Queue, Event]]) -> None:
    for events, event in items:
        events.put_nowait(event)


def _sample_batch(logits: torch.Tensor, batch: list[Request]) -> list[int]:
    """Every row's next token: greedy rows by one argmax; the others' probabilities computed together, then
    each drawn with its own generator so that a seed gives the same text whatever the batch."""
    tokens = torch.argmax(logits, dim=-1).tolist()
    sampled = [i for i, r in enumerate(batch) if r.sampling.temperature > 0]
    if not sampled:
        return tokens
    temps = torch.tensor([batch[i].sampling.temperature for i in sampled]).unsqueeze(1)
    probs = torch.softmax(logits[sampled] / temps, dim=-1)
    top_p = torch.tensor([batch[i].sampling.top_p for i in sampled]).unsqueeze(1)
    if bool((top_p < 1.0).any()):
        sorted_probs, order = torch.sort(probs, descending=True, dim=-1)
        keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < top_p
        probs = torch.zeros_like(probs).scatter(1, order, sorted_probs * keep)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    for row, i in enumerate(sampled):
        tokens[i] = int(torch.multinomial(probs[row], 1, generator=batch[i].generator))
    return tokens


def load_model(checkpoint_dir: Path, device: torch.device) -> TinyLM:
    """model.pt + config.json as the trainer writes them."""
    config = json.loads((checkpoint_dir / "config.json").read_text())["model"]
    model = TinyLM(ModelConfig(**config))
    state = torch.load(checkpoint_dir / "model.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    return model.to(device).eval()
