"""The bundled trainer, run as students run it (workloads/trainer/train.py), read from its own log line."""

from __future__ import annotations

import re
import shutil
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import smi
from proc import PYTHON, ROOT, Child, log, run, shown

TRAIN = ROOT / "workloads" / "trainer" / "train.py"
# The trainer's contract with the portal (docs/architecture.md, "The trainer's log line").
STEP_LINE = re.compile(
    r"^epoch=\d+ step=(?P<step>\d+) loss=(?P<loss>[0-9.]+) tok/s=(?P<toks>[0-9.]+)"
    r"(?: step_ms=(?P<step_ms>[0-9.]+))?(?: mfu=(?P<mfu>[0-9.]+))?$"
)
MFU_TARGET = 40.0


def peak_tflops(gpu_name: str) -> float | None:
    """The peak the trainer's MFU divides by, for this GPU (workloads/trainer/logline.py)."""
    sys.path.insert(0, str(TRAIN.parent))
    from logline import peak_for

    peak = peak_for(gpu_name)
    return peak / 1e12 if peak else None


@dataclass(frozen=True)
class Plan:
    """Sizes and lengths: gpt2-124m on the GPU, or the tiny model on the CPU for the quick rehearsal."""

    model: list[str]
    device: str
    steps: int
    compiled_steps: int
    log_every: int
    skip_intervals: int  # warm-up (and compilation) intervals left out of the figures
    workers: int

    @classmethod
    def for_mode(cls, quick: bool) -> Plan:
        if quick:
            tiny = ["--model", "tiny", "--n_layer", "1", "--n_embd", "64", "--batch_size", "4", "--seq_len", "32"]
            return cls(tiny, "cpu", 9, 9, 3, 1, 0)
        return cls(["--model", "gpt2-124m", "--batch_size", "16", "--seq_len", "1024"], "cuda", 80, 80, 10, 2, 4)

    def argv(self, precision: str, steps: int, run_dir: Path, *extra: str) -> list[str]:
        return [
            PYTHON,
            str(TRAIN),
            *self.model,
            "--device",
            self.device,
            "--precision",
            precision,
            "--max_steps",
            str(steps),
            "--log_every",
            str(self.log_every),
            "--num_workers",
            str(self.workers),
            "--checkpoint_minutes",
            "1000",
            "--run_dir",
            str(run_dir),
            *extra,
        ]


# name -> (precision, extra options, compiled)
RUNS = {
    "bf16_eager": ("bf16", [], False),
    "bf16_compiled": ("bf16", ["--compile"], True),
    "fp16_eager": ("fp16", [], False),  # the trainer's GradScaler is on for fp16 on a GPU
    "fp32_tf32_eager": ("fp32", ["--tf32"], False),
}


def figures(lines: list[str], skip: int) -> dict:
    """Median tok/s, step time and MFU over the intervals after the warm-up ones."""
    rows = [m for m in (STEP_LINE.match(line) for line in lines) if m]
    if not rows:
        return {"error": "no step line in the trainer's output"}
    steady = rows[skip:] or rows[-1:]
    result: dict = {
        "intervals_used": len(steady),
        "steps_used": f"{int(rows[skip - 1]['step']) + 1 if skip and len(rows) > skip else 1}-{steady[-1]['step']}",
        "tok_s": round(statistics.median(float(m["toks"]) for m in steady), 1),
        "step_ms": round(statistics.median(float(m["step_ms"]) for m in steady if m["step_ms"]), 2),
        "final_loss": float(rows[-1]["loss"]),
        "first_interval_tok_s": float(rows[0]["toks"]),
    }
    mfus = [float(m["mfu"]) for m in steady if m["mfu"]]
    if mfus:
        result["mfu_percent"] = round(statistics.median(mfus), 1)
    return result


def train(plan: Plan, name: str, out: Path, run_dir: Path, timeout: float) -> dict:
    precision, extra, compiled = RUNS[name]
    steps = plan.compiled_steps if compiled else plan.steps
    argv = plan.argv(precision, steps, run_dir, *extra)
    log(f"trainer {name}: {steps} steps, limit {timeout:.0f} s")
    result = run(argv, out / f"train-{name}.log", timeout, name, echo=lambda line: not line.startswith("epoch=0 step="))
    lines = result.pop("lines")
    result["command"] = shown(argv).replace(str(run_dir), "$RUN_DIR")
    result.update(precision=precision, compiled=compiled, steps=steps)
    result.update(figures(lines, plan.skip_intervals))
    for key in ("tok_s", "mfu_percent", "step_ms"):
        if key in result:
            log(f"  {name}: {key} = {result[key]}")
    if name != "bf16_eager":  # that one's model.pt is what the inference server serves; the rest are a GiB each
        shutil.rmtree(run_dir, ignore_errors=True)
    return result


def busy(plan: Plan, out: Path, run_dir: Path, seconds: float, dmon_seconds: int, timeout: float) -> dict:
    """The collector's query while the trainer runs (bf16, eager): from its first step line for `seconds`."""
    argv = plan.argv("bf16", 1_000_000, run_dir, "--epochs", "1000")  # an epoch of the text is ~250 steps
    trainer = Child(argv, out / "train-during-capture.log", "busy", echo=lambda line: False)
    deadline = time.monotonic() + timeout
    while not any(STEP_LINE.match(line) for line in trainer.lines):
        if trainer.proc.poll() is not None or time.monotonic() > deadline - seconds:
            trainer.kill()
            return {"error": "the trainer printed no step line", "log": trainer.log_path.name}
        time.sleep(0.2)
    captured = smi.capture(out, "training", seconds, dmon_seconds)
    trainer.kill(hard=True)  # a run with no end, stopped with its data-loader workers (no checkpoint to write)
    trainer.wait(10)
    shutil.rmtree(run_dir, ignore_errors=True)
    return {
        "trainer_command": shown(argv).replace(str(run_dir), "$RUN_DIR"),
        "trainer_log": trainer.log_path.name,
        "trainer": figures(trainer.lines, 1),
        **captured,
    }
