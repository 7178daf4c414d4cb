"""slurmrestd's job records as SchedulerStatus, read the way the SSH kind reads squeue and sacct."""

from __future__ import annotations

from datetime import UTC, datetime

from core.choices import JobState

from ..base import SchedulerStatus
from ..slurm_states import (  # one table for both SLURM kinds
    STATE_MAP,
    TERMINAL_RAW,
    never_starts,
    reason_text,
    shell_exit_code,
)

COMMENT_PREFIX = "gpulab:"


def _time(epoch) -> datetime | None:
    return datetime.fromtimestamp(epoch, tz=UTC) if isinstance(epoch, int) and epoch > 0 else None


def exit_code(wait_status) -> int | None:
    """slurmrestd's `exit_code` is the raw wait status: code in the high byte, the killing signal in the low bits."""
    if not isinstance(wait_status, int) or wait_status < 0:
        return None
    return shell_exit_code(wait_status >> 8 & 0xFF, wait_status & 0x7F)


def status_of(job: dict) -> SchedulerStatus:
    raw = str(job.get("job_state") or "UNKNOWN").split()[0]
    terminal = raw in TERMINAL_RAW
    reason = reason_text(job.get("state_reason"))
    return SchedulerStatus(
        scheduler_id=str(job["job_id"]),
        state=STATE_MAP.get(raw, JobState.RUNNING),
        raw_state=raw,
        reason=reason,
        never_starts=never_starts(reason) if raw == "PENDING" else "",
        exit_code=exit_code(job.get("exit_code")) if terminal else None,
        started_at=_time(job.get("start_time")) if raw != "PENDING" else None,  # pending: an estimate
        finished_at=_time(job.get("end_time")) if terminal else None,
    )


def statuses(answer: dict) -> dict[str, SchedulerStatus]:
    """Every job of a GET …/jobs answer, by scheduler id."""
    found = {}
    for job in answer.get("jobs") or []:
        if isinstance(job, dict) and isinstance(job.get("job_id"), int):
            status = status_of(job)
            found[status.scheduler_id] = status
    return found


def find_by_comment(answer: dict, job_id, user: str) -> str | None:
    """The scheduler id of the job carrying the portal job's UUID in its comment, submitted as `user`."""
    comment = f"{COMMENT_PREFIX}{job_id}"
    for job in answer.get("jobs") or []:
        if isinstance(job, dict) and job.get("comment") == comment and job.get("user_name") in (user, None):
            return str(job["job_id"])
    return None
