"""The processes of one run: rank, world and device as torchrun (or nothing) set them up, and a stop they agree on.

Under DDP every rank must make the same collective calls in the same order, so anything that can end the run
early (SIGTERM) is decided together: a rank that stopped alone would leave the others waiting forever.
"""

from __future__ import annotations

import os
import signal

import torch
import torch.distributed as dist


class Dist:
    """Rank, world and device as torchrun (or nothing) set them up."""

    def __init__(self, device_arg: str):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        use_cuda = device_arg == "cuda" or (device_arg == "auto" and torch.cuda.is_available())
        if use_cuda:
            self.device = torch.device("cuda", self.local_rank)
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        if self.world > 1:
            dist.init_process_group(backend="nccl" if use_cuda else "gloo")

    @property
    def main(self) -> bool:
        return self.rank == 0

    def mean(self, value: float) -> float:
        if self.world == 1:
            return value
        tensor = torch.tensor([value], device=self.device, dtype=torch.float64)
        dist.all_reduce(tensor)
        return tensor.item() / self.world

    def decided_by_main(self, yes: bool) -> bool:
        """Rank 0's answer, on every rank: a choice that leads into a collective (save a checkpoint, then barrier)
        must not rest on each rank's own clock, or ranks that disagree wait for each other forever."""
        if self.world == 1:
            return yes
        flag = torch.tensor([1.0 if yes else 0.0], device=self.device)
        dist.broadcast(flag, src=0)
        return flag.item() > 0

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def close(self) -> None:
        if self.world > 1:
            dist.destroy_process_group()


class StopSignal:
    """Set by SIGTERM; under DDP every rank stops at the same step (a rank that stopped alone would hang the rest).

    Only the handler writes `received`: a SIGTERM that lands while the ranks are agreeing counts at the next step.
    (Writing the agreed answer back over it lost that signal, and the job trained on until SIGKILL, unsaved.)
    """

    def __init__(self) -> None:
        self.received = False
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum, frame) -> None:
        self.received = True

    def agreed(self, env: Dist) -> bool:
        if env.world == 1:
            return self.received
        flag = torch.tensor([1.0 if self.received else 0.0], device=env.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return flag.item() > 0


def ignore_sigterm(worker_id: int) -> None:
    """Data-loader workers get SLURM's SIGTERM too; dying on it would raise in the trainer mid-step."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
