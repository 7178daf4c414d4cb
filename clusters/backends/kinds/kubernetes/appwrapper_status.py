"""A wrapped job's life, read from its AppWrapper's status (workload.codeflare.dev/v1beta2, AppWrapper v1.1 to v1.2)
and put in words for the student.

The AppWrapper controller moves `status.phase` through Empty → Suspended → Resuming → Running → Succeeded or Failed,
with Suspending (Kueue took its quota back) and Resetting (a retry: its Job deleted and made again) on the way, and
Terminating while it is deleted. Its conditions say why: QuotaReserved, ResourcesDeployed, PodsReady and Unhealthy
(with the controller's reasons: FoundFailedPods, InsufficientPodsReady, CreateFailed, MissingComponent,
FailedComponent, AutopilotNoExecute), and DeletingResources. A condition that turned true, or one turned false as the
AppWrapper moved to Suspended, Resetting, Succeeded or Failed, is a step of the job's timeline, kept once.

The phase decides what the pods alone cannot: that the job is waiting again after a reset or a preemption, or has
ended, since the AppWrapper, not its Job, has the last word on retries.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from core.choices import JobState

from ...base import QueueMilestone, SchedulerStatus
from . import kueue_status
from . import status as kube_status

UNHEALTHY_WORDS = {
    "FoundFailedPods": "a pod of its Job failed",
    "InsufficientPodsReady": "its pods were not all running in time",
    "CreateFailed": "the AppWrapper could not create its Job",
    "MissingComponent": "its Job was deleted from outside the AppWrapper",
    "FailedComponent": "its Job failed",
    "AutopilotNoExecute": "a node it ran on was marked unhealthy (Autopilot)",
}
# A condition turned false as the AppWrapper moved to one of these phases: the reason is the phase.
PHASE_STEPS = {
    "Suspended": "Suspended: the AppWrapper gave its quota back and removed its Job; it waits in the queue again",
    "Resetting": "Resetting: the AppWrapper deleted its Job to try again",
    "Succeeded": "Succeeded: all of its pods finished; the AppWrapper released its quota",
    "Failed": "Failed: the AppWrapper gave up and released its quota",
}


def condition(wrapper: dict, kind: str) -> dict | None:
    return kueue_status.condition(wrapper, kind)


def holds(wrapper: dict, kind: str) -> bool:
    return kueue_status.holds(wrapper, kind)


def phase(wrapper: dict) -> str:
    return str((wrapper.get("status") or {}).get("phase") or "")


def retries(wrapper: dict) -> int:
    return int((wrapper.get("status") or {}).get("resettingCount") or 0)


def unhealthy_words(wrapper: dict) -> str:
    found = condition(wrapper, "Unhealthy") or {}
    if found.get("status") != "True":
        return ""
    reason, message = found.get("reason", ""), found.get("message", "")
    words = UNHEALTHY_WORDS.get(reason, reason)
    return f"{words} ({message})" if message else words


def step_words(found: dict) -> str:
    kind, reason, message = found.get("type", ""), found.get("reason", ""), found.get("message", "")
    if found.get("status") != "True":
        return PHASE_STEPS.get(reason, "")
    if kind == "QuotaReserved":
        return "AppWrapper let go by Kueue: its quota is reserved"
    if kind == "ResourcesDeployed":
        return "The AppWrapper created its Job"
    if kind == "PodsReady":
        return f"The AppWrapper sees its pods ready ({message})" if message else "The AppWrapper sees its pods ready"
    if kind == "Unhealthy":
        words = UNHEALTHY_WORDS.get(reason, reason)
        return f"Unhealthy: {words}" + (f" ({message})" if message else "")
    if kind == "DeletingResources":
        return f"The AppWrapper holds its failed Job for inspection ({message})"
    return f"{kind}: {reason}"


def milestones(wrapper: dict) -> tuple[QueueMilestone, ...]:
    """The AppWrapper's steps so far, oldest first, each named "AppWrapper…" beside Kueue's own on the timeline."""
    steps = []
    for found in (wrapper.get("status") or {}).get("conditions") or []:
        at = kube_status.parse_time(found.get("lastTransitionTime"))
        words = step_words(found)
        if at is None or not words:
            continue
        name = found.get("type", "") if found.get("status") == "True" else found.get("reason", "")
        steps.append(QueueMilestone(f"AppWrapper{name}"[:32], found.get("reason", ""), words[:500], at))
    return tuple(sorted(steps, key=lambda step: step.at))


def _ended_at(wrapper: dict, reason: str) -> datetime | None:
    times = [
        kube_status.parse_time(found.get("lastTransitionTime"))
        for found in (wrapper.get("status") or {}).get("conditions") or []
        if found.get("reason") == reason
    ]
    return max((t for t in times if t), default=None)


def status(scheduler_id: str, wrapper: dict, pods: list[dict], queued: dict | None) -> SchedulerStatus:
    """The portal job's state from its AppWrapper, its Job's pods and Kueue's Workload (None without Kueue)."""
    found = _status(scheduler_id, phase(wrapper), wrapper, pods, queued)
    return dataclasses.replace(found, reason=found.reason[:255], milestones=milestones(wrapper))


def _status(scheduler_id: str, now: str, wrapper: dict, pods: list[dict], queued: dict | None) -> SchedulerStatus:
    if now in {"Succeeded", "Failed"}:
        return _ended(scheduler_id, now, wrapper, pods)
    if now in {"", "Suspended"}:
        return _waiting(scheduler_id, now, wrapper, queued)
    if now in {"Resuming", "Running"}:
        return _deployed(scheduler_id, now, wrapper, pods)
    return _moving(scheduler_id, now, wrapper, pods)


def _ended(scheduler_id: str, now: str, wrapper: dict, pods: list[dict]) -> SchedulerStatus:
    started, code = kube_status.started_at(pods), kube_status.exit_code(pods)
    if now == "Succeeded":
        reason, state, code = "The AppWrapper succeeded: all of its pods finished", JobState.COMPLETED, code or 0
    else:
        tries = retries(wrapper)
        after = f" after {tries} retr{'y' if tries == 1 else 'ies'}" if tries else ""
        reason, state = f"The AppWrapper gave up{after}: {unhealthy_words(wrapper) or 'it failed'}", JobState.FAILED
    return SchedulerStatus(
        scheduler_id, state, now, reason, exit_code=code, started_at=started, finished_at=_ended_at(wrapper, now)
    )


def _waiting(scheduler_id: str, now: str, wrapper: dict, queued: dict | None) -> SchedulerStatus:
    """Not let go yet: Kueue's words where it holds the AppWrapper, else the AppWrapper's own."""
    if queued is not None and not kueue_status.holds(queued, "Admitted"):
        return kueue_status.waiting(scheduler_id, queued)
    if now == "":
        return SchedulerStatus(scheduler_id, JobState.PENDING, "Empty", "The AppWrapper controller is taking it up")
    return SchedulerStatus(scheduler_id, JobState.PENDING, now, "The AppWrapper waits to be let go")


def _moving(scheduler_id: str, now: str, wrapper: dict, pods: list[dict]) -> SchedulerStatus:
    """Resetting (a retry), Suspending (Kueue took its quota back) and Terminating (being deleted)."""
    started = kube_status.started_at(pods)
    if now == "Resetting":
        why = unhealthy_words(wrapper) or "it was unhealthy"
        reason = f"The AppWrapper is retrying (retry {retries(wrapper)}): {why}; it deletes its Job and makes it again"
        return SchedulerStatus(scheduler_id, JobState.RUNNING, now, reason, started_at=started)
    if now == "Suspending":
        reason = "Kueue took the AppWrapper's quota back: it is removing its Job, then waits in the queue again"
        return SchedulerStatus(scheduler_id, JobState.PENDING, now, reason)
    state = JobState.RUNNING if pods else JobState.PENDING
    words = "The AppWrapper is being deleted" if now == "Terminating" else f"The AppWrapper is {now}"
    return SchedulerStatus(scheduler_id, state, now[:32], words, started_at=started if pods else None)


def _deployed(scheduler_id: str, now: str, wrapper: dict, pods: list[dict]) -> SchedulerStatus:
    """Resuming or Running: the Job exists (or is being made); its pods say how far it got."""
    from_pods = kube_status.from_pods(scheduler_id, "Job", pods)
    trouble = unhealthy_words(wrapper)
    if from_pods is not None:
        reason = from_pods.reason
        if trouble:
            reason = f"{reason}; " if reason else ""
            reason += f"{trouble}: the AppWrapper retries it unless it recovers within its grace period"
        return SchedulerStatus(
            scheduler_id, from_pods.state, now, reason, started_at=from_pods.started_at or kube_status.started_at(pods)
        )
    if pods:  # every pod ended: the AppWrapper is about to conclude (Succeeded, Resetting or Failed)
        return SchedulerStatus(
            scheduler_id,
            JobState.RUNNING,
            now,
            "Its pods ended; the AppWrapper is concluding",
            started_at=kube_status.started_at(pods),
        )
    words = "Admitted: the AppWrapper is creating its Job" if now == "Resuming" else "Waiting for its Job's pods"
    return SchedulerStatus(scheduler_id, JobState.PENDING, now, words)
