"""What a run leaves in --run_dir, and reads back: the layout the inference server and a resumed run rely on.

    checkpoint.pt   model, optimizer, step, epoch, config, options: every --checkpoint_minutes, at the end, on
                    SIGTERM; a run started again with the same --run_dir resumes from it
    model.pt        the weights alone, and config.json, once a run has finished (not when it was stopped):
                    what the inference server loads

A checkpoint is written to a temporary file and renamed, so a crash mid-write never leaves a broken one.
Only rank 0 writes, at steps rank 0 chooses; the others wait at a barrier so that no rank runs ahead of a checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
from distributed import Dist
from model import TinyLM

CHECKPOINT = "checkpoint.pt"


def save_checkpoint(path: Path, model: TinyLM, optimizer, step: int, epoch: int, args) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": step,
        "epoch": epoch,
        "config": model.config.as_dict(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
    }
    torch.save(state, tmp)
    os.replace(tmp, path)  # a crash mid-write never leaves a broken checkpoint


def resume(path: Path, model: TinyLM, optimizer, env: Dist) -> tuple[int, int]:
    """Load the checkpoint at `path` if there is one; the (step, epoch) to go on from, (0, 0) for a fresh run."""
    if not path.exists():
        return 0, 0
    state = torch.load(path, map_location=env.device, weights_only=False)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if env.main:
        print(f"resuming from {path} at step {state['step']}", flush=True)
    return state["step"], state["epoch"]


def write_final(run_dir: Path, model: TinyLM, args, step: int, loss: float | None) -> None:
    torch.save(model.state_dict(), run_dir / "model.pt")
    config = {
        "model": model.config.as_dict(),
        "trained_steps": step,
        "final_loss": loss,
        "size": args.model,
        "tokenizer": "bytes",
    }
    (run_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")


class Every:
    """The periodic checkpoint: saved by rank 0 once --checkpoint_minutes have passed since the last one on rank 0's
    clock. Rank 0 decides and tells the others (one small broadcast per step), so every rank reaches the barrier
    after a save at the same step, however far their clocks drift apart."""

    def __init__(self, args: argparse.Namespace, env: Dist, model: TinyLM, optimizer):
        self.args, self.env, self.model, self.optimizer = args, env, model, optimizer
        self.path = args.run_dir / CHECKPOINT
        self.last = time.monotonic()

    def maybe_save(self, step: int, epoch: int) -> bool:
        """Save if due; True when this step saved (on every rank alike)."""
        due = time.monotonic() - self.last >= self.args.checkpoint_minutes * 60
        if not self.env.decided_by_main(due):
            return False
        if self.env.main:
            save_checkpoint(self.path, self.model, self.optimizer, step, epoch, self.args)
        self.env.barrier()
        self.last = time.monotonic()
        return True
