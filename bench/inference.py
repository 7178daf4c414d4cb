"""Inference batching: 16 concurrent clients (the seed's --max-concurrency=16) against the server with dynamic
batching and with batching off; output tokens/s of each, and p95 TTFT against a single client's TTFT.
Target: batched at least 4 times unbatched, with p95 TTFT at most twice the single-client TTFT.

    workloads/.venv/bin/python bench/inference.py [--checkpoint DIR] [--num-prompts 64]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT / "workloads"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(checkpoint: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "server.py", "--checkpoint", str(checkpoint), "--port", str(port), *extra],
        cwd=WORKLOADS / "inference",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
                if response.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the server did not start")


def server_ttft(url: str) -> tuple[float, float]:
    """(sum, count) of the server's own time-to-first-token histogram: submission to first token."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
        text = response.read().decode()
    values = {}
    for line in text.splitlines():
        for key in ("sum", "count"):
            if line.startswith(f"gpulab_inference_time_to_first_token_seconds_{key} "):
                values[key] = float(line.split()[-1])
    return values.get("sum", 0.0), values.get("count", 0.0)


def load(url: str, concurrency: int, prompts: int, output_len: int) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [
                sys.executable,
                str(WORKLOADS / "inference" / "loadgen.py"),
                "--base-url",
                url,
                "--max-concurrency",
                str(concurrency),
                "--num-prompts",
                str(prompts),
                "--input-len",
                "32",
                "--output-len",
                str(output_len),
                "--json",
                out.name,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return json.loads(Path(out.name).read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, help="a trainer run directory; default: train a tiny one now")
    parser.add_argument("--num-prompts", type=int, default=64)
    parser.add_argument("--output-len", type=int, default=64)
    args = parser.parse_args()
    checkpoint = args.checkpoint
    if checkpoint is None:
        checkpoint = Path(tempfile.mkdtemp()) / "run"
        subprocess.run(
            [
                sys.executable,
                str(WORKLOADS / "trainer" / "train.py"),
                "--max_steps",
                "200",
                "--num_workers",
                "0",
                "--run_dir",
                str(checkpoint),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    results = {}
    for name, extra in (("batched", ["--max-batch", "16", "--max-wait-ms", "5"]), ("unbatched", ["--max-batch", "1"])):
        proc, url = serve(checkpoint, *extra)
        try:
            load(url, 4, 8, 8)  # warm-up
            if name == "batched":
                results["single_client"] = load(url, 1, 16, args.output_len)
            before = server_ttft(url)
            results[name] = load(url, 16, args.num_prompts, args.output_len)
            after = server_ttft(url)
            count = after[1] - before[1]
            results[name]["server_ttft_mean_ms"] = round(1000 * (after[0] - before[0]) / count, 2) if count else None
        finally:
            proc.terminate()
            proc.wait()
    speedup = results["batched"]["output_tokens_per_s"] / results["unbatched"]["output_tokens_per_s"]
    ttft_ratio = results["batched"]["ttft_p95_ms"] / results["single_client"]["ttft_p50_ms"]
    summary = {
        "clients": 16,
        "batched_output_tokens_per_s": results["batched"]["output_tokens_per_s"],
        "unbatched_output_tokens_per_s": results["unbatched"]["output_tokens_per_s"],
        "speedup": round(speedup, 2),
        "single_client_ttft_ms": results["single_client"]["ttft_p50_ms"],
        "batched_ttft_p95_ms": results["batched"]["ttft_p95_ms"],
        "unbatched_ttft_p95_ms": results["unbatched"]["ttft_p95_ms"],
        "ttft_p95_over_single": round(ttft_ratio, 2),
        "server_side_ttft_mean_ms_batched": results["batched"]["server_ttft_mean_ms"],
        "batched_tpot_p50_ms": results["batched"]["tpot_p50_ms"],
        "unbatched_tpot_p50_ms": results["unbatched"]["tpot_p50_ms"],
    }
    print(json.dumps(summary, indent=2))
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "inference.json").write_text(json.dumps({"summary": summary, "runs": results}, indent=2))


if __name__ == "__main__":
    main()
