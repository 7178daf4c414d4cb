"""What rank 0 prints. One of these lines is a contract: the step line the portal's telemetry parses into curves
(docs/architecture.md, "The trainer's log line"; telemetry/parsers.py reads it):

    epoch=<int> step=<int> loss=<float> tok/s=<float> step_ms=<float> total_steps=<int> [mfu=<float>]

`loss` is the interval's mean over all ranks, `tok/s` counts every rank's tokens, `step_ms` is the interval's
mean step time, `total_steps` the steps this run plans in all (--max_steps, or fewer where the last epoch ends
first: the portal's progress and ETA count to it), `mfu` (GPU only) the percentage of the GPU's peak dense bf16/fp16
FLOP/s. Change its keys or their order only together with the parser. The start and ending lines are for people.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from pathlib import Path

import torch
from distributed import Dist

PRECISION_NAMES = {None: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
# Peak dense bf16/fp16 tensor FLOP/s, for MFU. Other GPUs: pass --peak_tflops.
# First match wins: the PCIe and NVL cards come before the SXM H100 their names also contain.
PEAK_TFLOPS = {
    "H200": 989.0,
    "H100 PCIe": 756.0,
    "H100 NVL": 835.0,
    "H100": 989.0,
    "A100": 312.0,
    "L40S": 362.0,
    "A10": 125.0,
    "L4": 121.0,
    "V100": 125.0,
}


def step_line(
    epoch: int, step: int, loss: float, tok_s: float, step_ms: float, total_steps: int, mfu: float | None = None
) -> str:
    line = (
        f"epoch={epoch} step={step} loss={loss:.4f} tok/s={tok_s:.1f} step_ms={step_ms:.1f} total_steps={total_steps}"
    )
    return line if mfu is None else f"{line} mfu={mfu:.1f}"


class StepLog:
    """Sums the steps of one interval; every --log_every steps (and at the last) rank 0 prints their step line."""

    def __init__(self, args: argparse.Namespace, env: Dist, total_steps: int, flops_per_token: float):
        self.env, self.every, self.total_steps = env, args.log_every, total_steps
        self.tokens_per_step = args.batch_size * args.seq_len * env.world
        self.flops_per_token = flops_per_token
        self.peak = peak_flops(args, env.device)
        self.restart()

    def restart(self) -> None:
        self.started, self.steps, self.loss_sum = time.monotonic(), 0, 0.0

    def add(self, loss: float) -> None:
        self.steps += 1
        self.loss_sum += loss

    def due(self, step: int) -> bool:
        return step % self.every == 0 or step == self.total_steps

    def report(self, epoch: int, step: int) -> float:
        """Print the interval's line (rank 0) and start the next interval; the interval's loss, all ranks' mean.

        Every rank calls it at the same step: the mean is a collective."""
        if self.env.device.type == "cuda":
            torch.cuda.synchronize()  # the GPU's queued work belongs to this interval's time
        elapsed = time.monotonic() - self.started
        loss = self.env.mean(self.loss_sum / self.steps)
        tok_s = self.tokens_per_step * self.steps / elapsed
        mfu = 100 * self.flops_per_token * tok_s / self.env.world / self.peak if self.peak else None
        if self.env.main:
            ms = 1000 * elapsed / self.steps
            print(step_line(epoch, step, loss, tok_s, ms, self.total_steps, mfu), flush=True)
        self.restart()
        return loss


def peak_flops(args: argparse.Namespace, device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    if args.peak_tflops:
        return args.peak_tflops * 1e12
    return peak_for(torch.cuda.get_device_name(device))


def peak_for(name: str) -> float | None:
    """The peak dense bf16/fp16 FLOP/s of a GPU by its CUDA name; None for one not in PEAK_TFLOPS."""
    return next((tf * 1e12 for key, tf in PEAK_TFLOPS.items() if key in name), None)


def start_line(args: argparse.Namespace, env: Dist, parameters: int, cast: torch.dtype | None, steps: int) -> str:
    return (
        f"model={args.model} params={parameters / 1e6:.2f}M world={env.world} "
        f"device={env.device.type} precision={precision_name(args, cast)} batch={args.batch_size} "
        f"seq_len={args.seq_len} steps={steps} run_dir={args.run_dir}"
    )


# Where the scheduler says which GPUs a job holds (SLURM; the NVIDIA device plugin and container runtime): lists of
# GPUs, and SLURM's count on the node (the only one a SLURM without CUDA_VISIBLE_DEVICES in its gres.conf sets).
GPU_LISTS = ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
GPU_COUNT = "SLURM_GPUS_ON_NODE"
NO_GPUS = {"", "-1", "none", "void", "NoDevFiles"}


def _given_gpus(environ: Mapping[str, str]) -> tuple[str, str] | None:
    for name in GPU_LISTS:
        if environ.get(name, "") not in NO_GPUS:
            return name, environ[name]
    count = environ.get(GPU_COUNT, "")
    return (GPU_COUNT, count) if count.isdigit() and int(count) > 0 else None


def no_cuda_line(device: torch.device, environ: Mapping[str, str]) -> str | None:
    """A line for a run given GPUs that PyTorch cannot use: on the demo's stand-in GPUs (or a node without CUDA) it
    trains on the CPU, and its figures must not be read as a GPU's. None on a GPU, or where no GPU was given."""
    given = _given_gpus(environ)
    if device.type != "cpu" or given is None:
        return None
    name, value = given
    return (
        f"note: this job was given GPUs ({name}={value}) but PyTorch finds no CUDA device, so it trains on the CPU. "
        "Where the GPUs are simulated (the demo's stand-in nvidia-smi), their charts replay recorded figures, and "
        "times, tok/s and what precision or batch size change measure this CPU, not what a GPU does."
    )


def precision_name(args: argparse.Namespace, cast: torch.dtype | None) -> str:
    name = PRECISION_NAMES[cast]
    return f"{name}+tf32" if getattr(args, "tf32", False) else name


def ending_line(stopped: bool, step: int, total_steps: int, checkpoint: Path) -> str:
    if stopped:
        return (
            f"stopped by SIGTERM at step {step} of {total_steps}; checkpoint saved to {checkpoint} "
            "(launch again with the same run directory to resume)"
        )
    return f"done at step {step}; checkpoint saved to {checkpoint}"
