"""The parts of bench/gpu/measure.sh, in order, each under its own limit inside one overall budget.

A part's limit is its cap, or less where the parts after it need their minimum; a part with less than its own
minimum left is skipped and says so. results.json and summary.md are rewritten after every part, so whatever ends
the run early leaves what was measured so far.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import report
import serving
import smi
import training
from proc import PYTHON, ROOT, end_all, log, run, shown

QUICK = os.environ.get("GPULAB_GPU_QUICK") == "1"
OUT = Path(os.environ["OUT"]).resolve()
BUDGET = float(os.environ.get("GPULAB_GPU_BUDGET_S", "380"))
SAMPLE_S = 4.0 if QUICK else 30.0
DMON_S = 2 if QUICK else 10


@dataclass
class Part:
    name: str
    cap: float  # seconds at most
    least: float  # seconds below which it is skipped
    do: Callable[[float], dict]


class Session:
    def __init__(self) -> None:
        self.plan = training.Plan.for_mode(QUICK)
        self.work = Path(tempfile.mkdtemp(prefix="gpulab-measure-"))
        self.results: dict = {"meta": meta(), "parts": {}}

    def run_dir(self, name: str) -> Path:
        return self.work / name

    def parts(self) -> list[Part]:
        t = training
        return [
            Part("nvidia_smi_static", 30, 10, lambda limit: {"files": smi.static(OUT, limit)}),
            Part("nvidia_smi_idle", SAMPLE_S + 15, SAMPLE_S / 3, self.idle),
            *(Part(f"train_{name}", cap, least, self.trainer(name)) for name, cap, least in TRAINER_PARTS),
            Part(
                "nvidia_smi_training",
                SAMPLE_S + 40,
                SAMPLE_S / 2 + 10,
                lambda limit: t.busy(self.plan, OUT, self.run_dir("busy"), min(SAMPLE_S, limit - 15), DMON_S, limit),
            ),
            Part("inference", 120, 45, self.inference),
            Part("profile", 90, 40, self.profile),
        ]

    def idle(self, limit: float) -> dict:
        return smi.capture(OUT, "idle", min(SAMPLE_S, limit - 5), DMON_S)

    def trainer(self, name: str) -> Callable[[float], dict]:
        return lambda limit: training.train(self.plan, name, OUT, self.run_dir(name), limit)

    def inference(self, limit: float) -> dict:
        checkpoint = self.run_dir("bf16_eager")
        if not (checkpoint / "model.pt").exists():
            return {"skipped": "no model.pt from the bf16 eager run to serve"}
        force = os.environ.get("GPULAB_GPU_INPROCESS") == "1"
        result = serving.measure(checkpoint, OUT, limit, QUICK, force)
        result["checkpoint"] = f"the bf16 eager run's model.pt ({' '.join(self.plan.model)}, fp32 weights)"
        return result

    def profile(self, limit: float) -> dict:
        compiled = self.results["parts"].get("train_bf16_compiled", {})
        mfu = compiled.get("mfu_percent")
        if not QUICK and mfu is not None and mfu >= training.MFU_TARGET:
            return {"skipped": f"compiled bf16 MFU {mfu} % meets the {training.MFU_TARGET:.0f} % target"}
        use_compile = not QUICK and compiled.get("exit_status") == 0
        trainer = self.plan.argv("bf16", 10_000, self.run_dir("profile"))[2:]
        trainer += ["--compile"] if use_compile else []
        argv = [PYTHON, str(Path(__file__).parent / "profile_steps.py"), "--out", str(OUT), "--warmup"]
        argv += ["3" if QUICK else "15", "--steps", "3" if QUICK else "5", "--", *trainer]
        result = run(argv, OUT / "profile.log", limit, "profile")
        lines = result.pop("lines")
        result["command"] = shown(argv).replace(str(OUT), "$OUT").replace(str(self.run_dir("profile")), "$RUN_DIR")
        result["why"] = f"compiled bf16 MFU {mfu} % is under {training.MFU_TARGET:.0f} %" if mfu else "no MFU figure"
        result["compiled"] = use_compile
        for line in reversed(lines):
            if line.startswith("{"):
                result.update(json.loads(line))
                break
        return result

    def save(self) -> None:
        (OUT / "results.json").write_text(json.dumps(self.results, indent=2, default=str))
        (OUT / "summary.md").write_text(report.summary(self.results))

    def go(self) -> None:
        parts = self.parts()
        deadline = time.monotonic() + BUDGET
        for index, part in enumerate(parts):
            later = sum(p.least for p in parts[index + 1 :])
            limit = min(part.cap, deadline - time.monotonic() - later)
            if limit < part.least:
                log(f"{part.name}: skipped, {limit:.0f} s left for it")
                self.results["parts"][part.name] = {"skipped": f"out of time: {limit:.0f} s left of the budget"}
                continue
            log(f"== {part.name} (limit {limit:.0f} s)")
            started = time.monotonic()
            try:
                result = part.do(limit)
            except Exception as exc:  # one part's bug must not cost the others their figures
                traceback.print_exc()
                result = {"error": f"{type(exc).__name__}: {exc}"}
            result.setdefault("part_seconds", round(time.monotonic() - started, 1))
            self.results["parts"][part.name] = result
            self.save()
        self.results["meta"]["total_seconds"] = round(BUDGET - (deadline - time.monotonic()), 1)
        self.save()
        shutil.rmtree(self.work, ignore_errors=True)


# (run name, cap, least): compilation of gpt2-124m takes most of a minute on a cold cache
TRAINER_PARTS = [
    ("bf16_eager", 75, 30),
    ("bf16_compiled", 150, 45),
    ("fp16_eager", 60, 25),
    ("fp32_tf32_eager", 60, 25),
]


GPU_INFO = """
import json, torch
info = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available()}
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    info.update(gpu=p.name, gpu_memory_gib=round(p.total_memory / 2**30, 1), sms=p.multi_processor_count)
print(json.dumps(info))
"""


def meta() -> dict:
    """What ran where. PyTorch is asked in a child process: a CUDA context here would sit in every capture."""
    probe = subprocess.run([PYTHON, "-c", GPU_INFO], capture_output=True, text=True, timeout=60, check=True)
    info = {
        "quick_rehearsal": QUICK,
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "host": platform.node(),
        "python": platform.python_version(),
        **json.loads(probe.stdout.splitlines()[-1]),
        "budget_s": BUDGET,
        "run_from": str(ROOT),
    }
    if "gpu" in info:
        info["mfu_peak_tflops"] = training.peak_tflops(info["gpu"])
    gpu_lines = (OUT / "gpu-name.txt").read_text().splitlines() if (OUT / "gpu-name.txt").exists() else []
    info["nvidia_smi_name_driver_memory"] = gpu_lines[0] if gpu_lines else ""
    return info


def stopped(signum: int, frame: object) -> None:
    """The overall limit (or a person) stopped the run: end the children too, and keep what was measured."""
    log(f"stopped by signal {signum}; ending the running part")
    end_all()
    sys.exit(128 + signum)


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGINT, stopped)
    Session().go()
