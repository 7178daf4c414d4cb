"""The GPUs a test's jobs got, made to show a recorded GPU's figures (scripts/fixtures/nvidia-smi's replays): the
node is shared with the other lanes' jobs, so a test cannot count on SLURM handing it the recorded index it needs.
The replays are one file on the node: the tests that write it (marked `slurm_gpu_replays`) share one lane."""

from __future__ import annotations

import contextlib
from pathlib import Path

from .conftest import slurm

REPLAYS = Path("/run/gpulab-nvidia-smi-replays")  # the stand-in's "gpu=source" lines
# GPUs of the recorded rows (scripts/fixtures/nvidia-smi-query.csv).
TRAINING, STARVING, IDLE = 0, 2, 3  # busy; memory full at 12-28 %; nothing


def gpus_of(scheduler_id: str) -> list[int]:
    """The GPU indexes SLURM gave a running job, in order."""
    shown = slurm("scontrol", "show", "job", "-d", scheduler_id)
    return gres_indexes(shown.split("IDX:")[1].split(")")[0])


def gres_indexes(text: str) -> list[int]:
    """SLURM's GRES index list as `scontrol show job -d` prints it ("0-1", "0,2", "0-1,3"), in order."""
    indexes: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        indexes += range(int(first), int(last or first) + 1)
    return indexes


def replay(replays: dict[int, int]) -> None:
    """Have the stand-in nvidia-smi show these GPUs with another recorded GPU's figures ({} for none)."""
    if replays:  # whole or not at all: the stand-in reads it every second
        written = REPLAYS.with_suffix(".new")
        written.write_text("".join(f"{gpu}={source}\n" for gpu, source in replays.items()))
        written.replace(REPLAYS)
    else:
        with contextlib.suppress(FileNotFoundError):
            REPLAYS.unlink()
