"""The step loop: from the step a run starts at (0, or where a checkpoint left off) to --max_steps, the end of the
last epoch, or an agreed SIGTERM, whichever comes first.

A resumed run walks the epoch's batches again and skips those already trained, so it sees the same data in the
same order as a run that never stopped. Every rank takes the same steps and makes the same collective calls
(loss mean, stop agreement) in the same order.
"""

from __future__ import annotations

import argparse
import math
from contextlib import nullcontext
from dataclasses import dataclass

import torch
from checkpoints import Every
from distributed import StopSignal
from logline import StepLog
from prepare import Run


@dataclass
class Outcome:
    step: int  # steps trained in all, across resumes
    epoch: int
    loss: float | None  # the last logged loss, None if no line was printed
    stopped: bool  # by SIGTERM, rather than at the end


def train_steps(run: Run, stop: StopSignal) -> Outcome:
    args, env = run.args, run.env
    stopped = stop.agreed(env)
    step, epoch, loss = run.start_step, run.start_epoch, None
    checkpoint = Every(args, env, run.model, run.optimizer)
    log = StepLog(args, env, run.total_steps, run.model.flops_per_token(args.seq_len))
    run.train_model.train()
    while epoch < args.epochs and step < run.total_steps and not stopped:
        run.sampler.set_epoch(epoch)
        for index, (x, y) in enumerate(run.loader):
            if epoch * run.steps_per_epoch + index < step:
                continue  # already trained before the resume
            log.add(train_step(run, x, y, learning_rate(args, step, run.total_steps)))
            step += 1
            if log.due(step):
                loss = log.report(epoch, step)
            checkpoint.maybe_save(step, epoch)
            stopped = stop.agreed(env)
            if step >= run.total_steps or stopped:
                break
        else:
            epoch += 1
    return Outcome(step, epoch, loss, stopped)


def train_step(run: Run, x: torch.Tensor, y: torch.Tensor, lr: float) -> float:
    """One optimizer step on one batch; the batch's loss."""
    x = x.to(run.env.device, non_blocking=True)
    y = y.to(run.env.device, non_blocking=True)
    for group in run.optimizer.param_groups:
        group["lr"] = lr
    context = torch.autocast(run.env.device.type, dtype=run.cast) if run.cast else nullcontext()
    with context:
        _, loss = run.train_model(x, y)
    run.scaler.scale(loss).backward()
    run.scaler.unscale_(run.optimizer)
    torch.nn.utils.clip_grad_norm_(run.model.parameters(), run.args.grad_clip)
    run.scaler.step(run.optimizer)
    run.scaler.update()
    run.optimizer.zero_grad(set_to_none=True)
    return loss.item()


def learning_rate(args: argparse.Namespace, step: int, total_steps: int) -> float:
    """Linear warm-up, then cosine decay to a tenth."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    progress = min(1.0, (step - args.warmup_steps) / max(1, total_steps - args.warmup_steps))
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))
