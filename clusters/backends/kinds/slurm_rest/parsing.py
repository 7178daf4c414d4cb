"""slurmrestd's job records as SchedulerStatus, read the way the SSH kind reads squeue and sacct."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from core.choices import JobState

from ...base import AccountedUsage, SchedulerStatus
from ...queue import QueuedJob, QueueView
from ...slurm_family import arrays
from ...slurm_family.states import (  # one table for both SLURM kinds
    FOR_RESOURCES,
    STATE_MAP,
    TERMINAL_RAW,
    never_starts,
    reason_text,
    shell_exit_code,
    waiting_words,
)
from .versions import ApiVersion

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
    """Every job of a GET …/jobs answer, by scheduler id: an array's task as "<array>_<task>" (its own job id is
    not its key: clusters/backends/slurm_family/arrays.py), an array's tasks still waiting together once each."""
    found = {}
    for job in answer.get("jobs") or []:
        if isinstance(job, dict) and isinstance(job.get("job_id"), int):
            status = status_of(job)
            for key in task_keys(job):
                found[key] = replace(status, scheduler_id=key)
    return found


def task_keys(job: dict) -> list[str]:
    """The ids one listed job stands for: itself, one array task, or the waiting tasks of an array."""
    array, task = _number(job.get("array_job_id")), _number(job.get("array_task_id"))
    if not array:
        return [str(job["job_id"])]
    if task is not None and task not in (NO_VAL, INFINITE):
        return [f"{array}_{task}"]
    waiting = str(job.get("array_task_string") or "").partition("%")[0]
    return arrays.task_ids(f"{array}_[{waiting}]") if waiting else [str(job["job_id"])]


INFINITE = 0xFFFFFFFF  # SLURM's "no limit"
NO_VAL = 0xFFFFFFFE  # SLURM's "not set"


def _number(value) -> int | None:
    """An integer field: a plain int, or the {"set", "number"} form newer API versions use."""
    if isinstance(value, dict):
        value = value.get("number") if value.get("set", True) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _gpus_per_node(tres_per_node) -> int:
    """ "gres:gpu:2" or "gres:gpu:a100:2" (comma-separated with other TRES) → 2."""
    total = 0
    for item in str(tres_per_node or "").split(","):
        parts = item.replace("/", ":").split(":")
        if "gpu" in parts and parts[-1].isdigit():
            total += int(parts[-1])
    return total


def queued_job(job: dict) -> QueuedJob | None:
    """A pending or running job of GET …/jobs as the queue sees it; None for the rest."""
    raw = str(job.get("job_state") or "").split()[0] if job.get("job_state") else ""
    if raw not in ("PENDING", "RUNNING"):
        return None
    pending = raw == "PENDING"
    nodes = str(job.get("nodes") or "")
    return QueuedJob(
        scheduler_id=str(job["job_id"]),
        state=JobState.PENDING if pending else JobState.RUNNING,
        partition=str(job.get("partition") or "").split(",")[0],
        gpus_per_node=_gpus_per_node(job.get("tres_per_node")),
        node_count=_number(job.get("node_count")) or 1,
        nodes=tuple(nodes.split(",")) if nodes and "[" not in nodes else (),  # a host range stays unexpanded
        priority=_number(job.get("priority")),
        time_limit_minutes=_number(job.get("time_limit")),
        submitted_at=_time(_number(job.get("submit_time"))),
        start_at=_time(_number(job.get("start_time"))),
        end_at=None if pending else _time(_number(job.get("end_time"))),
        reason=waiting_words(reason_text(job.get("state_reason"))) if pending else "",
        for_resources=pending and job.get("state_reason") in FOR_RESOURCES,
    )


def queue_view(answer: dict, version: ApiVersion) -> QueueView:
    """The queue from the same GET …/jobs answer the poll reads: no call of its own."""
    jobs = (queued_job(job) for job in answer.get("jobs") or [] if isinstance(job, dict) and "job_id" in job)
    no_factors = "This cluster's REST API gives each job's priority, not what makes it (sprio's factors)."
    return QueueView(
        jobs=tuple(job for job in jobs if job is not None), note="" if version.priority_factors else no_factors
    )


def find_by_comment(answer: dict, job_id, user: str) -> str | None:
    """The scheduler id of the job carrying the portal job's UUID in its comment, submitted as `user`."""
    comment = f"{COMMENT_PREFIX}{job_id}"
    for job in answer.get("jobs") or []:
        if isinstance(job, dict) and job.get("comment") == comment and job.get("user_name") in (user, None):
            return str(_number(job.get("array_job_id")) or job["job_id"])  # an array's tasks all carry its comment
    return None


def _tres(entries, kind: str, name: str | None = None) -> int | None:
    """The count of one TRES ("cpu", "mem", ("gres", "gpu")) in a slurmdbd TRES list."""
    for entry in entries or ():
        if isinstance(entry, dict) and entry.get("type") == kind and (name is None or entry.get("name") == name):
            count = entry.get("count")
            return count if isinstance(count, int) else None
    return None


def _seconds(value) -> float:
    """slurmdbd's {"seconds", "microseconds"} (microseconds may exceed a second: they are added, not a fraction)."""
    if not isinstance(value, dict):
        return 0.0
    return float(value.get("seconds") or 0) + float(value.get("microseconds") or 0) / 1_000_000


def usage(answer: dict, ids: list[str]) -> dict[str, AccountedUsage]:
    """GET /slurmdb/v0.0.3x/jobs?step=… as sacct's figures: TotalCPU and MaxRSS come from the steps, as in sacct.

    slurmctld (which the poll asks) knows a job has ended before slurmdbd has stored its end, and slurmdbd may store
    the end before the job's time limit: a record without either is left out, and asked for again in a later cycle
    (every job the portal submits has a limit); a limit still NO_VAL counts as not stored. A limit of INFINITE is kept
    as none."""
    found: dict[str, AccountedUsage] = {}
    for job in answer.get("jobs") or []:
        scheduler_id = str(job.get("job_id", ""))
        time, tres, steps = job.get("time") or {}, job.get("tres") or {}, job.get("steps") or []
        limit = _number(time.get("limit"))
        if scheduler_id not in ids or not time.get("end") or not limit or limit == NO_VAL:
            continue
        peaks = [_tres(((step.get("tres") or {}).get("requested") or {}).get("max"), "mem") for step in steps]
        memory_mib = _tres(tres.get("requested"), "mem")
        found[scheduler_id] = AccountedUsage(
            scheduler_id=scheduler_id,
            elapsed_seconds=int(time.get("elapsed") or 0),
            cpu_seconds=round(sum(_seconds((step.get("time") or {}).get("total")) for step in steps), 3),
            cpus=_tres(tres.get("allocated"), "cpu") or 0,
            gpus=_tres(tres.get("allocated"), "gres", "gpu") or 0,
            max_rss_bytes=max((peak for peak in peaks if peak), default=None),
            requested_memory_bytes=memory_mib * 1024**2 if memory_mib else None,
            time_limit_minutes=limit if limit < INFINITE else None,
        )
    return found
