"""SLURM's job states and reasons as the portal reads them: one table for every SLURM kind (SSH and REST).

squeue, sacct and slurmrestd print the same state names; anything not listed counts as running (it is on a node).
"""

from core.choices import TERMINAL_STATES, JobState

STATE_MAP = {
    "PENDING": JobState.PENDING,
    "REQUEUED": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "RESV_DEL_HOLD": JobState.PENDING,
    "COMPLETED": JobState.COMPLETED,
    "CANCELLED": JobState.CANCELLED,
    "TIMEOUT": JobState.TIMED_OUT,
    "DEADLINE": JobState.TIMED_OUT,
    "FAILED": JobState.FAILED,
    "NODE_FAIL": JobState.FAILED,
    "BOOT_FAIL": JobState.FAILED,
    "OUT_OF_MEMORY": JobState.FAILED,
    "PREEMPTED": JobState.FAILED,
    "SPECIAL_EXIT": JobState.FAILED,
    "REVOKED": JobState.FAILED,
}
TERMINAL_RAW = {raw for raw, state in STATE_MAP.items() if state in TERMINAL_STATES}


def reason_text(raw: str | None) -> str:
    """SLURM's pending or ending reason, or "" where SLURM says there is none."""
    return "" if not raw or raw in {"None", "(null)"} else raw


def shell_exit_code(code: int, signal: int) -> int:
    """A shell-style exit code from SLURM's pair: 128+signal when the job was killed by a signal."""
    return 128 + signal if code == 0 and signal else code
