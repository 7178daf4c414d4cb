"""A torch.profiler capture of a few training steps of the bundled trainer, built by the trainer's own set-up.

    python3 bench/gpu/profile_steps.py --out DIR [--warmup 15] [--steps 5] -- <train.py options>

Writes DIR/profile-table.txt (key_averages, by device time and by CPU time), DIR/profile-trace.json(.gz) when it
is small enough to bring back, and prints one JSON line with the step time and the share of it the GPU was busy.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "workloads" / "trainer"))
import torch
from distributed import Dist
from loop import train_step
from prepare import prepare
from torch.profiler import ProfilerActivity, profile
from train import parse_args

TRACE_LIMIT = 25 * 2**20  # bytes, after gzip


def batches(run):
    while True:
        yield from run.loader


def sync(run) -> None:
    if run.env.device.type == "cuda":
        torch.cuda.synchronize()


def device_time(event) -> float:
    """An averaged event's own time on the GPU (µs), under either name PyTorch has used."""
    return getattr(event, "self_device_time_total", None) or getattr(event, "self_cuda_time_total", 0.0) or 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--warmup", type=int, default=15, help="steps before the capture (compilation, allocator)")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("trainer", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    trainer_argv = [a for a in args.trainer if a != "--"]
    targs = parse_args(trainer_argv)
    run = prepare(targs, Dist(targs.device))
    data = batches(run)
    run.train_model.train()
    for _ in range(args.warmup):
        train_step(run, *next(data), targs.lr)
    sync(run)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if run.env.device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        started = time.perf_counter()
        for _ in range(args.steps):
            train_step(run, *next(data), targs.lr)
        sync(run)
        wall = time.perf_counter() - started
    averages = prof.key_averages()
    on_gpu = sum(device_time(e) for e in averages) / 1e6
    tables = []
    if on_gpu:
        tables.append(("by GPU time", averages.table(sort_by="self_device_time_total", row_limit=40)))
    tables.append(("by CPU time", averages.table(sort_by="self_cpu_time_total", row_limit=25)))
    with (args.out / "profile-table.txt").open("w") as fh:
        fh.write(f"train.py {' '.join(trainer_argv)}\n{args.steps} steps after {args.warmup} warm-up steps\n")
        for title, table in tables:
            fh.write(f"\n== {title} ==\n{table}\n")
    trace = args.out / "profile-trace.json"
    prof.export_chrome_trace(str(trace))
    with trace.open("rb") as src, gzip.open(f"{trace}.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    trace.unlink()
    kept = Path(f"{trace}.gz")
    if kept.stat().st_size > TRACE_LIMIT:
        kept.unlink()
    summary = {
        "steps": args.steps,
        "step_ms": round(1000 * wall / args.steps, 2),
        "gpu_busy_percent": round(100 * on_gpu / wall, 1) if on_gpu else None,
        "table": "profile-table.txt",
        "trace": kept.name if kept.exists() else f"left out: over {TRACE_LIMIT // 2**20} MiB compressed",
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
