"""The bundled inference server on the GPU: 16 concurrent clients with batching (--max-batch 16) and without
(--max-batch 1), and the p95 time to first token of 16 clients against a single client's.

Over HTTP (server.py + loadgen.py, as bench/inference.py does) where python3 has FastAPI, uvicorn and httpx;
otherwise the server's engine in-process (engine_load.py). The result says which path it took.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from proc import PYTHON, ROOT, Child, log, run, shown

INFERENCE = ROOT / "workloads" / "inference"
MODES = {"batched": ["--max-batch", "16", "--max-wait-ms", "5"], "unbatched": ["--max-batch", "1"]}
HTTP_MODULES = ("fastapi", "uvicorn", "httpx", "pydantic", "prometheus_client")


def http_available() -> tuple[bool, str]:
    """Whether python3 can run server.py and loadgen.py: their libraries, and the server's own modules."""
    probe = subprocess.run(
        [PYTHON, "-c", f"import {', '.join(HTTP_MODULES)}; import server, loadgen"],
        cwd=INFERENCE,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    if probe.returncode == 0:
        return True, "python3 has " + ", ".join(HTTP_MODULES) + " and imports server.py"
    return False, (probe.stderr.strip().splitlines() or ["import failed"])[-1]


def measure(checkpoint: Path, out: Path, timeout: float, quick: bool, force_inprocess: bool) -> dict:
    size = {"num_prompts": 8 if quick else 64, "output_len": 8 if quick else 64}
    has_http, why = http_available()
    path = "http" if has_http and not force_inprocess else "in-process"
    reason = "GPULAB_GPU_INPROCESS=1" if force_inprocess else why
    log(f"inference: {path} path ({reason}); checkpoint {checkpoint.name}")
    deadline = time.monotonic() + timeout
    runs: dict = {}
    for mode in MODES:
        share = (deadline - time.monotonic()) / (2 if mode == "batched" else 1)
        if path == "http":
            runs[mode] = over_http(checkpoint, out, mode, size, share)
        else:
            runs[mode] = in_process(checkpoint, out, mode, size, share)
    return {
        "path": path,
        "path_reason": reason,
        "server_batching": "--max-batch N (1 = off)",
        **summary(runs),
        "runs": runs,
    }


def summary(runs: dict) -> dict:
    try:
        batched, unbatched = runs["batched"]["clients"], runs["unbatched"]["clients"]
        single = runs["batched"]["single_client"]
    except KeyError:
        return {"error": "a run did not finish; see runs"}
    return {
        "clients": 16,
        "batched_output_tokens_per_s": batched["output_tokens_per_s"],
        "unbatched_output_tokens_per_s": unbatched["output_tokens_per_s"],
        "batching_speedup": round(batched["output_tokens_per_s"] / unbatched["output_tokens_per_s"], 2),
        "single_client_ttft_p50_ms": single["ttft_p50_ms"],
        "single_client_ttft_p95_ms": single["ttft_p95_ms"],
        "batched_16_ttft_p95_ms": batched["ttft_p95_ms"],
        "unbatched_16_ttft_p95_ms": unbatched["ttft_p95_ms"],
        "ttft_p95_16_over_single_p95": round(batched["ttft_p95_ms"] / single["ttft_p95_ms"], 2),
        "ttft_p95_16_over_single_p50": round(batched["ttft_p95_ms"] / single["ttft_p50_ms"], 2),
        "ttft_target": "p95 with 16 clients at most 2x a single client's",
        "batched_tpot_p50_ms": batched["tpot_p50_ms"],
        "unbatched_tpot_p50_ms": unbatched["tpot_p50_ms"],
    }


def in_process(checkpoint: Path, out: Path, mode: str, size: dict, timeout: float) -> dict:
    result_file = out / f"inference-{mode}.json"
    argv = [PYTHON, str(Path(__file__).parent / "engine_load.py"), "--checkpoint", str(checkpoint), *MODES[mode]]
    argv += ["--clients", "16", "--num-prompts", str(size["num_prompts"]), "--output-len", str(size["output_len"])]
    argv += ["--json", str(result_file)] + (["--single-client"] if mode == "batched" else [])
    result = run(argv, out / f"inference-{mode}.log", timeout, mode)
    result.pop("lines")
    result["command"] = shown(argv).replace(str(checkpoint), "$CHECKPOINT").replace(str(out), "$OUT")
    if result_file.exists():
        figures = json.loads(result_file.read_text())
        result.update({key: figures[key] for key in ("clients", "single_client") if key in figures})
    return result


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def over_http(checkpoint: Path, out: Path, mode: str, size: dict, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    port = free_port()
    argv = [PYTHON, "server.py", "--checkpoint", str(checkpoint), "--port", str(port), *MODES[mode]]
    server = Child(argv, out / f"inference-server-{mode}.log", f"server {mode}", cwd=INFERENCE)
    url = f"http://127.0.0.1:{port}"
    result: dict = {
        "server_command": "cd workloads/inference && " + shown(argv).replace(str(checkpoint), "$CHECKPOINT")
    }
    try:
        if not wait_healthy(url, server, deadline):
            result["error"] = "the server did not become healthy; see its log"
            return result
        loads = [("warm_up", 4, 8, 8)]
        if mode == "batched":
            loads.append(("single_client", 1, 16, size["output_len"]))
        loads.append(("clients", 16, size["num_prompts"], size["output_len"]))
        for name, clients, prompts, output_len in loads:
            figures = loadgen(url, out, f"{mode}-{name}", clients, prompts, output_len, deadline - time.monotonic())
            if name != "warm_up":
                result[name] = figures
    finally:
        server.kill()
        server.wait(10)
    return result


def wait_healthy(url: str, server: Child, deadline: float) -> bool:
    while time.monotonic() < deadline and server.proc.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            time.sleep(0.3)
    return False


def loadgen(url: str, out: Path, label: str, clients: int, prompts: int, output_len: int, timeout: float) -> dict:
    result_file = out / f"loadgen-{label}.json"
    argv = [PYTHON, str(INFERENCE / "loadgen.py"), "--base-url", url, "--max-concurrency", str(clients)]
    argv += ["--num-prompts", str(prompts), "--input-len", "32", "--output-len", str(output_len)]
    argv += ["--json", str(result_file)]
    ran = run(argv, out / f"loadgen-{label}.log", timeout, label)
    ran.pop("lines")
    if not result_file.exists():
        return {"error": f"loadgen ended with {ran['exit_status']} (timed out: {ran['timed_out']})", **ran}
    figures = json.loads(result_file.read_text())
    figures["command"] = shown(argv).replace(str(out), "$OUT")
    return figures
