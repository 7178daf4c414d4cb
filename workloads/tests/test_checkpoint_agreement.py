"""Under DDP the periodic checkpoint is taken at the same step on every rank, whatever each rank's own clock says:
two CPU processes (torch.distributed, gloo) whose clocks run at different speeds, as ranks do when one waits on
its data or its GPU, save at the steps rank 0 chooses, all reach the barrier together, and never hang.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
from pathlib import Path

import checkpoints
import torch
import torch.distributed as dist
from checkpoints import CHECKPOINT, Every
from conftest import free_port
from distributed import Dist
from model import ModelConfig, TinyLM

STEPS = 12
SECONDS_PER_STEP = {0: 10.0, 1: 13.0}  # rank 1's clock runs faster: by its own clock it is due two steps early


def rank_main(rank: int, port: int, run_dir: str, results) -> None:
    os.environ.update(WORLD_SIZE="2", RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    clock = {"now": 1000.0}
    checkpoints.time.monotonic = lambda: clock["now"]  # this process's own clock, as the checkpoint reads it
    env = Dist("cpu")
    model = TinyLM(ModelConfig(n_layer=1, n_head=2, n_embd=16, block_size=16))
    optimizer = torch.optim.AdamW(model.parameters())
    args = argparse.Namespace(run_dir=Path(run_dir), checkpoint_minutes=1.0)
    every = Every(args, env, model, optimizer)
    saved = []
    for step in range(1, STEPS + 1):
        clock["now"] += SECONDS_PER_STEP[rank]
        loss = torch.tensor([float(step)])
        dist.all_reduce(loss)  # the step's own collective: a rank that went into the barrier alone would hang here
        if every.maybe_save(step, 0):
            saved.append(step)
    env.close()
    results.put((rank, saved))


def test_ranks_with_drifting_clocks_checkpoint_at_the_same_steps_chosen_by_rank_0(tmp_path):
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    port = free_port()
    ranks = [context.Process(target=rank_main, args=(r, port, str(tmp_path), results)) for r in (0, 1)]
    for process in ranks:
        process.start()
    got = {}
    try:
        for _ in ranks:
            rank, saved = results.get(timeout=60)
            got[rank] = saved
    except queue.Empty:
        raise AssertionError(f"the ranks hung (disagreed on a collective); finished: {got}") from None
    finally:
        for process in ranks:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
    # Rank 0's clock: 10 s a step, one-minute checkpoints, so steps 6 and 12; rank 1 follows it, not its own clock.
    assert got == {0: [6, 12], 1: [6, 12]}
    assert (tmp_path / CHECKPOINT).exists()
