"""A portal job's state from what Kubernetes reports: its pods' phases, and its workload's conditions.

Pods come from the one list per namespace per cycle. Only when the pods cannot settle it (none yet, or all
of a batch Job's pods have ended) does the backend read the workload itself, as SLURM's poll reads
scontrol only for jobs that just finished. Pending reasons are put in words a student can act on.
"""

from __future__ import annotations

import re
from datetime import datetime

from core.choices import JobState

from ...base import SchedulerStatus

# The seed lab's troubleshooting list: what the scheduler says, and what it means for the student.
SCHEDULING_HINTS = [
    (
        re.compile(r"Insufficient nvidia\.com/gpu"),
        "no node has a free nvidia.com/gpu right now; it starts when one frees",
    ),
    (re.compile(r"Insufficient cpu"), "no node has enough free CPU; it starts when some frees"),
    (re.compile(r"Insufficient memory"), "no node has enough free memory; it starts when some frees"),
    (
        re.compile(r"unbound immediate PersistentVolumeClaims|unbound PersistentVolumeClaims"),
        "its volume is not bound yet",
    ),
    (re.compile(r"untolerated taint"), "the free nodes carry taints the pod does not tolerate"),
    (re.compile(r"didn't match Pod's node affinity|node selector"), "no node matches its node selector"),
]
WAITING_HINTS = {
    "ImagePullBackOff": "the image cannot be pulled",
    "ErrImagePull": "the image cannot be pulled",
    "InvalidImageName": "the image name is not valid",
    "CrashLoopBackOff": "a container keeps crashing; the log shows why",
    "CreateContainerConfigError": "the container's configuration is wrong",
    "ContainerCreating": "starting containers (pulling the image)",
    "PodInitializing": "running init containers",
}


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _condition(obj: dict, kind: str) -> dict | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return condition
    return None


def _containers(pod: dict) -> list[dict]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def phase(pod: dict) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def is_ready(pod: dict) -> bool:
    ready = _condition(pod, "Ready")
    return phase(pod) == "Running" and bool(ready and ready.get("status") == "True")


def pending_reason(pod: dict) -> str:
    """Why a pod waits, in words, keeping the scheduler's own message."""
    scheduled = _condition(pod, "PodScheduled")
    if scheduled and scheduled.get("status") == "False":
        message = scheduled.get("message") or scheduled.get("reason") or "Unschedulable"
        hint = next((text for pattern, text in SCHEDULING_HINTS if pattern.search(message)), "")
        return f"Not scheduled: {hint} ({message})" if hint else f"Not scheduled: {message}"
    for container in _containers(pod):
        waiting = (container.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason")
        if reason:
            hint = WAITING_HINTS.get(reason, reason)
            detail = f": {waiting['message']}" if waiting.get("message") else ""
            return f"{container.get('name')}: {hint}{detail}"
    return "Waiting for a node"


def exit_code(pods: list[dict]) -> int | None:
    """The first non-zero exit code of the pods' containers, else 0 if any container ended."""
    codes = [
        terminated.get("exitCode")
        for pod in pods
        for container in _containers(pod)
        for terminated in [(container.get("state") or {}).get("terminated") or {}]
        if terminated.get("exitCode") is not None
    ]
    return next((c for c in codes if c != 0), 0 if codes else None)


def started_at(pods: list[dict]) -> datetime | None:
    times = [t for t in (parse_time((p.get("status") or {}).get("startTime")) for p in pods) if t]
    return min(times) if times else None


def from_pods(scheduler_id: str, workload: str, pods: list[dict]) -> SchedulerStatus | None:
    """The state the pods show, or None when only the workload object can tell (see module doc)."""
    if not pods:
        return None
    phases = [phase(p) for p in pods]
    running = phases.count("Running")
    pending = [p for p in pods if phase(p) in {"Pending", "Unknown"}]
    if workload == "Deployment":
        ready = sum(is_ready(p) for p in pods)
        if running:
            waiting = next((pending_reason(p) for p in pods if not is_ready(p)), "")
            reason = f"{ready}/{len(pods)} pods ready" + (f"; {waiting}" if waiting else "")
            return SchedulerStatus(scheduler_id, JobState.RUNNING, "Running", reason, started_at=started_at(pods))
        if pending:
            return SchedulerStatus(scheduler_id, JobState.PENDING, "Pending", pending_reason(pending[0]))
        return None  # only failed pods: the Deployment's conditions say more
    if running or (pending and len(pending) < len(pods)):
        return SchedulerStatus(scheduler_id, JobState.RUNNING, "Running", "", started_at=started_at(pods))
    if pending:
        return SchedulerStatus(scheduler_id, JobState.PENDING, "Pending", pending_reason(pending[0]))
    return None  # every pod ended: the Job's conditions decide (retries, deadlines)


def replicas_in_words(workload: dict) -> str:
    """An operator job's replica statuses (PyTorchJob: Master, Worker), e.g. "Master: 1 succeeded; Worker: 1 failed"."""
    parts = []
    for kind, counts in sorted(((workload.get("status") or {}).get("replicaStatuses") or {}).items()):
        said = [f"{counts[word]} {word}" for word in ("active", "succeeded", "failed") if (counts or {}).get(word)]
        if said:
            parts.append(f"{kind}: {', '.join(said)}")
    return f"({'; '.join(parts)})" if parts else ""


def from_workload(scheduler_id: str, workload: dict, pods: list[dict]) -> SchedulerStatus:
    """The state of a workload whose pods did not settle it."""
    kind = workload.get("kind")
    if kind == "Deployment":
        replicas = (workload.get("spec") or {}).get("replicas", 1)
        failure = _condition(workload, "ReplicaFailure")
        if failure and failure.get("status") == "True":
            return SchedulerStatus(
                scheduler_id, JobState.PENDING, "Pending", f"Cannot create pods: {failure.get('message')}"
            )
        if replicas == 0:
            return SchedulerStatus(scheduler_id, JobState.RUNNING, "ScaledToZero", "Scaled to 0 replicas")
        return SchedulerStatus(scheduler_id, JobState.PENDING, "Pending", "Waiting for the Deployment's pods")
    complete = _condition(workload, "Complete") or _condition(workload, "Succeeded")
    failed = _condition(workload, "Failed")
    finished_at = parse_time((workload.get("status") or {}).get("completionTime"))
    if complete and complete.get("status") == "True":
        return SchedulerStatus(
            scheduler_id,
            JobState.COMPLETED,
            "Complete",
            exit_code=exit_code(pods) or 0,
            started_at=started_at(pods) or parse_time((workload.get("status") or {}).get("startTime")),
            finished_at=finished_at or parse_time(complete.get("lastTransitionTime")),
        )
    if failed and failed.get("status") == "True":
        reason = failed.get("reason") or "Failed"
        state = JobState.TIMED_OUT if reason == "DeadlineExceeded" else JobState.FAILED
        message = " ".join(filter(None, [failed.get("message") or "", replicas_in_words(workload)]))
        return SchedulerStatus(
            scheduler_id,
            state,
            reason,
            message,
            exit_code=exit_code(pods),
            started_at=started_at(pods),
            finished_at=parse_time(failed.get("lastTransitionTime")),
        )
    if pods:  # all pods ended but the controller has not concluded yet
        return SchedulerStatus(scheduler_id, JobState.RUNNING, "Running", "", started_at=started_at(pods))
    return SchedulerStatus(scheduler_id, JobState.PENDING, "Pending", "Waiting for the Job controller to create pods")
