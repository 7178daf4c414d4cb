"""Trainer throughput: tok/s on CPU for `tiny`; on an NVIDIA GPU also tok/s and MFU for `gpt2-124m` at bf16,
with and without --compile.

    workloads/.venv/bin/python bench/trainer.py [--steps 60]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "workloads" / "trainer" / "train.py"
LINE = re.compile(r"^epoch=\d+ step=(\d+) loss=([0-9.]+) tok/s=([0-9.]+) step_ms=([0-9.]+)(?: mfu=([0-9.]+))?$")


def run(name: str, args: list[str], steps: int) -> dict:
    with tempfile.TemporaryDirectory() as run_dir:
        argv = [
            sys.executable,
            str(TRAIN),
            "--max_steps",
            str(steps),
            "--log_every",
            str(max(1, steps // 6)),
            "--run_dir",
            run_dir,
            *args,
        ]
        out = subprocess.run(argv, capture_output=True, text=True, check=False, env={**os.environ})
    if out.returncode != 0:
        return {"name": name, "error": out.stderr[-500:]}
    rows = [LINE.match(line).groups() for line in out.stdout.splitlines() if LINE.match(line)]
    steady = rows[1:] or rows  # the first interval includes warm-up (and compilation)
    result = {
        "name": name,
        "args": " ".join(args),
        "tok_s": round(statistics.median(float(r[2]) for r in steady), 1),
        "step_ms": round(statistics.median(float(r[3]) for r in steady), 2),
        "final_loss": float(rows[-1][1]),
    }
    if steady[0][4] is not None:
        result["mfu_percent"] = round(statistics.median(float(r[4]) for r in steady), 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--gpu-steps", type=int, default=120)
    args = parser.parse_args()
    import torch

    results = [
        run(
            "tiny, CPU, fp32",
            [
                "--model",
                "tiny",
                "--device",
                "cpu",
                "--batch_size",
                "32",
                "--seq_len",
                "128",
                "--num_workers",
                "1",
                "--precision",
                "fp32",
            ],
            args.steps,
        )
    ]
    if torch.cuda.is_available():
        gpu = [
            "--model",
            "gpt2-124m",
            "--device",
            "cuda",
            "--batch_size",
            "16",
            "--seq_len",
            "1024",
            "--precision",
            "bf16",
            "--num_workers",
            "4",
        ]
        results.append(run("gpt2-124m, GPU, bf16", gpu, args.gpu_steps))
        results.append(run("gpt2-124m, GPU, bf16, compile", [*gpu, "--compile"], args.gpu_steps))
        results[-1]["gpu"] = torch.cuda.get_device_name()
    else:
        results.append({"name": "gpt2-124m on a GPU", "skipped": "no NVIDIA GPU on this machine"})
    for row in results:
        print(json.dumps(row))
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "trainer.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
