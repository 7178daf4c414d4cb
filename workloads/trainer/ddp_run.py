"""torchrun for the bundled trainer, ending quietly when the job is cancelled or reaches its time limit.

    python3 ddp_run.py --nnodes … --nproc_per_node … train.py …   (the arguments of `python -m torch.distributed.run`)

SLURM signals every process of a job it stops, torchrun too. torchrun then stops its trainer processes (each saves
its checkpoint and prints "stopped by SIGTERM at step N …") and raises its own SignalException, whose traceback, with
the agent's shutdown warnings, reads like a crash below the trainer's own last line. Here that signal ends the run
with one line saying it was cancelled, and exit status 0, as the single-process trainer does. Any other failure keeps
torchrun's own report.
"""

from __future__ import annotations

import logging
import signal
import sys

from torch.distributed.elastic.multiprocessing.api import SignalException
from torch.distributed.run import main as torchrun

# torchrun's warnings as it shuts its workers down on a signal: expected after a cancel, so not repeated in the log.
SHUTDOWN_WARNINGS = ("death signal, shutting down workers", "closing signal")
SHUTDOWN_LOGGERS = ("torch.distributed.elastic.agent.server.api", "torch.distributed.elastic.multiprocessing.api")


def _not_shutdown_warning(record: logging.LogRecord) -> bool:
    return not any(words in record.getMessage() for words in SHUTDOWN_WARNINGS)


def cancelled_line(signum: int) -> str:
    name = signal.Signals(signum).name
    return f"cancelled ({name}): torchrun stopped its trainer processes; rank 0 saved the checkpoint named above"


def run(argv: list[str] | None = None) -> int:
    for name in SHUTDOWN_LOGGERS:
        logging.getLogger(name).addFilter(_not_shutdown_warning)
    try:
        torchrun(argv)
    except SignalException as exc:
        print(cancelled_line(exc.sigval), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run())
