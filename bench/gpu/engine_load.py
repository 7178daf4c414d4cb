"""The inference server's decoding engine (workloads/inference/engine.py) driven in-process, for a machine whose
python has PyTorch but not FastAPI/uvicorn/httpx: the same engine, batching and sampling the server uses, with
asyncio clients in place of HTTP ones. TTFT here is submission to first token inside the process (no HTTP).

    python3 bench/gpu/engine_load.py --checkpoint RUN_DIR --max-batch 16 --clients 16 --num-prompts 64 --json F
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import string
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "workloads" / "inference"))
import torch
from engine import Engine, Request, Sampling, load_model


def percentile(values: list[float], pct: float) -> float:
    """The same nearest-rank percentile as workloads/inference/loadgen.py."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def prompts(count: int, length: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + "      ,."
    return ["".join(rng.choice(alphabet) for _ in range(length)) for _ in range(count)]


async def one(engine: Engine, prompt: str, max_tokens: int, seed: int) -> tuple[float, float, int]:
    """(TTFT, latency, tokens) of one request, timed from its submission."""
    request = Request(
        prompt.encode(), Sampling(max_tokens=max_tokens, temperature=0.8, seed=seed), asyncio.get_running_loop()
    )
    started = time.perf_counter()
    engine.submit(request)
    first, tokens = None, 0
    while True:
        event = await request.events.get()
        if event.kind == "done":
            break
        tokens += 1
        first = first if first is not None else time.perf_counter() - started
    return first or 0.0, time.perf_counter() - started, tokens


async def load(engine: Engine, clients: int, texts: list[str], max_tokens: int) -> dict:
    limit = asyncio.Semaphore(clients)

    async def bounded(index: int, text: str) -> tuple[float, float, int]:
        async with limit:
            return await one(engine, text, max_tokens, index)

    started = time.perf_counter()
    results = await asyncio.gather(*(bounded(i, t) for i, t in enumerate(texts)))
    duration = time.perf_counter() - started
    ttfts = [r[0] for r in results]
    tokens = sum(r[2] for r in results)
    figures = {
        "max_concurrency": clients,
        "num_prompts": len(texts),
        "output_len": max_tokens,
        "completed": len(results),
        "duration_s": round(duration, 3),
        "output_tokens_per_s": round(tokens / duration, 1),
        "total_output_tokens": tokens,
    }
    tpots = [(r[1] - r[0]) / (r[2] - 1) for r in results if r[2] > 1]
    for name, values in (("ttft", ttfts), ("tpot", tpots)):
        for pct in (50, 95, 99):
            figures[f"{name}_p{pct}_ms"] = round(1000 * percentile(values, pct), 2)
    return figures


async def measure(args: argparse.Namespace) -> dict:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    engine = Engine(load_model(args.checkpoint, device), device, max_batch=args.max_batch, max_wait_ms=args.max_wait_ms)
    try:
        await load(engine, 4, prompts(8, args.input_len, 99), 8)  # warm-up
        result = {"device": str(device), "max_batch": args.max_batch}
        if args.single_client:
            result["single_client"] = await load(engine, 1, prompts(16, args.input_len, 1), args.output_len)
        result["clients"] = await load(engine, args.clients, prompts(args.num_prompts, args.input_len), args.output_len)
        return result
    finally:
        engine.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--max-batch", type=int, default=16)
    parser.add_argument("--max-wait-ms", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--num-prompts", type=int, default=64)
    parser.add_argument("--input-len", type=int, default=32)
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--single-client", action="store_true", help="also 16 requests one at a time")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)  # as the server does by default
    sys.setswitchinterval(0.001)  # as the server does: the decode thread and the clients' loop share the GIL
    result = asyncio.run(measure(args))
    args.json.write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
