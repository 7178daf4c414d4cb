"""Load generator for the inference server (either API), in the manner of vLLM's benchmark_serving.

    python loadgen.py --base-url http://127.0.0.1:11434 --api openai --num-prompts 64 --max-concurrency 16 \
        --input-len 32 --output-len 64

Random prompts of --input-len bytes, --output-len tokens each (stop sequences off), streamed so that the
time to first token (TTFT) and time per output token (TPOT) are measured per request. Prints requests/s,
output tokens/s, and TTFT/TPOT p50/p95/p99; --json writes the same figures to a file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import string
import sys
import time
from dataclasses import dataclass, field

import httpx


@dataclass
class Result:
    ok: bool
    ttft: float = 0.0
    latency: float = 0.0
    output_tokens: int = 0
    error: str = ""
    chunks: list[float] = field(default_factory=list)

    @property
    def tpot(self) -> float | None:
        if self.output_tokens < 2:
            return None
        return (self.latency - self.ttft) / (self.output_tokens - 1)


def random_prompt(rng: random.Random, length: int) -> str:
    alphabet = string.ascii_letters + "      ,."
    return "".join(rng.choice(alphabet) for _ in range(length))


async def one_request(client: httpx.AsyncClient, args, prompt: str, seed: int) -> Result:
    started = time.perf_counter()
    result = Result(ok=False)
    if args.api == "openai":
        url = "/v1/completions"
        body = {
            "model": args.model,
            "prompt": prompt,
            "max_tokens": args.output_len,
            "temperature": args.temperature,
            "seed": seed,
            "stream": True,
        }
    else:
        url = "/api/generate"
        body = {
            "model": args.model,
            "prompt": prompt,
            "stream": True,
            "options": {"num_predict": args.output_len, "temperature": args.temperature, "seed": seed},
        }
    try:
        async with client.stream("POST", url, json=body) as response:
            if response.status_code != 200:
                result.error = f"HTTP {response.status_code}: {(await response.aread())[:200]!r}"
                return result
            async for line in response.aiter_lines():
                if not line.strip():
                    continue
                if args.api == "openai":
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    payload = json.loads(line[6:])
                    done = payload["choices"][0]["finish_reason"] is not None
                else:
                    payload = json.loads(line)
                    done = payload.get("done", False)
                    if done:
                        result.output_tokens = payload.get("eval_count", result.output_tokens)
                if not done:  # one chunk per generated token (its text may be empty mid-character)
                    now = time.perf_counter() - started
                    if not result.chunks:
                        result.ttft = now
                    result.chunks.append(now)
                if done and args.api == "openai":
                    result.output_tokens = len(result.chunks)
    except httpx.HTTPError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    result.latency = time.perf_counter() - started
    result.output_tokens = result.output_tokens or len(result.chunks)
    result.ok = True
    return result


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


async def run(args) -> dict:
    rng = random.Random(args.seed)
    prompts = [random_prompt(rng, args.input_len) for _ in range(args.num_prompts)]
    limit = asyncio.Semaphore(args.max_concurrency)
    timeout = httpx.Timeout(args.timeout)
    limits = httpx.Limits(max_connections=args.max_concurrency, max_keepalive_connections=args.max_concurrency)
    async with httpx.AsyncClient(base_url=args.base_url, timeout=timeout, limits=limits) as client:

        async def bounded(index: int, prompt: str) -> Result:
            async with limit:
                return await one_request(client, args, prompt, args.seed + index)

        started = time.perf_counter()
        results = await asyncio.gather(*(bounded(i, p) for i, p in enumerate(prompts)))
        duration = time.perf_counter() - started
    good = [r for r in results if r.ok]
    ttfts = [r.ttft for r in good]
    tpots = [r.tpot for r in good if r.tpot is not None]
    output = sum(r.output_tokens for r in good)
    figures = {
        "api": args.api,
        "num_prompts": args.num_prompts,
        "max_concurrency": args.max_concurrency,
        "input_len": args.input_len,
        "output_len": args.output_len,
        "completed": len(good),
        "failed": len(results) - len(good),
        "duration_s": round(duration, 3),
        "requests_per_s": round(len(good) / duration, 3),
        "output_tokens_per_s": round(output / duration, 1),
        "total_output_tokens": output,
    }
    for name, values in (("ttft", ttfts), ("tpot", tpots)):
        for pct in (50, 95, 99):
            figures[f"{name}_p{pct}_ms"] = round(1000 * percentile(values, pct), 2)
    errors = [r.error for r in results if not r.ok]
    if errors:
        figures["first_error"] = errors[0]
    return figures


REPORT_PREFIX = "GPULAB_REPORT"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:11434")
    parser.add_argument("--api", choices=["openai", "ollama"], default="openai")
    parser.add_argument("--model", default="tinylm")
    parser.add_argument("--num-prompts", type=int, default=64)
    parser.add_argument("--max-concurrency", type=int, default=16)
    parser.add_argument("--input-len", type=int, default=32, help="prompt length in bytes (= tokens)")
    parser.add_argument("--output-len", type=int, default=64, help="tokens to generate per request")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--report-line", action="store_true", help=f"end with one '{REPORT_PREFIX} {{json}}' line for the portal"
    )
    args = parser.parse_args(argv)
    figures = asyncio.run(run(args))
    print(f"{'completed requests':<28}{figures['completed']} of {args.num_prompts} ({figures['failed']} failed)")
    print(f"{'duration':<28}{figures['duration_s']:.2f} s")
    print(f"{'requests/s':<28}{figures['requests_per_s']:.2f}")
    print(f"{'output tokens/s':<28}{figures['output_tokens_per_s']:.1f}")
    for name in ("ttft", "tpot"):
        row = "  ".join(f"p{pct} {figures[f'{name}_p{pct}_ms']:.1f} ms" for pct in (50, 95, 99))
        print(f"{name.upper():<28}{row}")
    if "first_error" in figures:
        print("first error:", figures["first_error"], file=sys.stderr)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(figures, fh, indent=2)
    if args.report_line:
        print(REPORT_PREFIX, json.dumps(figures, separators=(",", ":")), flush=True)
    return 0 if figures["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
