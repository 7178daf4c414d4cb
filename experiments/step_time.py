"""Seconds per training step, by step: the comparison's step-time chart, derived from what the collector stored.

The collector stores the trainer's loss and tok/s by step, not its step time (step_ms reaches the live points in
Redis only), so the chart derives it from tok/s: the trainer prints tok/s as tokens per step x steps / seconds
(workloads/trainer/logline.py), hence seconds per step = tokens per step / tok/s, exactly, where tokens per step is
batch_size x seq_len x its processes (one per GPU; one on a CPU). A run whose parameters do not name batch_size and
seq_len gets no step-time line rather than a guess.
"""

from __future__ import annotations

from jobs.models import Job


def tokens_per_step(job: Job) -> int | None:
    """The tokens one optimizer step of the run takes, all ranks together; None where its parameters do not say."""
    batch, seq_len = _positive(job.params.get("batch_size")), _positive(job.params.get("seq_len"))
    if batch is None or seq_len is None:
        return None
    return batch * seq_len * max(job.gpus, 1)


def _positive(value) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def seconds_per_step(steps: list[float], tok_s: list[float], per_step: int) -> tuple[list[float], list[float]]:
    """(steps, seconds per step) from the run's tok/s by step; a step without a positive tok/s is left out."""
    kept = [(step, speed) for step, speed in zip(steps, tok_s, strict=True) if speed is not None and speed > 0]
    return [step for step, _ in kept], [round(per_step / speed, 6) for _, speed in kept]
