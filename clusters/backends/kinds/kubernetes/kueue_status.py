"""A job's life in Kueue, read from its Workload (kueue.x-k8s.io/v1beta1) and put in words for the student.

The Workload's conditions say where the job stands in its queue: QuotaReserved, Admitted, PodsReady, Evicted,
Preempted, Requeued and Finished, each with Kueue's reason. A condition that turned true is a milestone the job
page's timeline keeps (once: its lastTransitionTime tells one step from the next); a false QuotaReserved says why
the job still waits. The ClusterQueue's status says how many GPUs the course's queue uses and borrows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.choices import JobState

from ...base import QueueMilestone, SchedulerStatus
from .status import parse_time

GPU = "nvidia.com/gpu"
EVICTED_WORDS = {
    "Preempted": "stopped by Kueue to make room for another job (preempted)",
    "PodsReadyTimeout": "stopped by Kueue: its pods were not all ready in time",
    "AdmissionCheck": "stopped by Kueue: an admission check withdrew its approval",
    "ClusterQueueStopped": "stopped by Kueue: an admin stopped the course's ClusterQueue",
    "LocalQueueStopped": "stopped by Kueue: an admin stopped the course's LocalQueue",
    "Deactivated": "stopped by Kueue: the job was deactivated",
    "InactiveWorkload": "stopped by Kueue: the job was deactivated",
    "NodeFailures": "stopped by Kueue: a node it ran on failed",
}
PREEMPTED_WORDS = {
    "InClusterQueue": "a job of the same course with a higher priority, or submitted earlier, needed its GPUs",
    "InCohortReclamation": "another course took back GPUs this course had borrowed from it",
    "InCohortFairSharing": "the cohort's fair sharing gave its GPUs to another course",
    "InCohortReclaimWhileBorrowing": "another course, itself borrowing, took back GPUs this course had borrowed",
}
REQUEUED_WORDS = {
    "Preempted": "back in the queue after being preempted",
    "PodsReadyTimeout": "back in the queue after its pods were not ready in time",
    "BackoffFinished": "back in the queue after its back-off",
    "ClusterQueueRestarted": "back in the queue: the course's ClusterQueue was restarted",
    "LocalQueueRestarted": "back in the queue: the course's LocalQueue was restarted",
    "Reactivated": "back in the queue: the job was reactivated",
}
NO_QUOTA = re.compile(
    r"insufficient unused quota for (?P<resource>\S+) in flavor (?P<flavor>[^,\s]+), (?P<n>\d+) more needed"
)
NEVER_FITS = re.compile(r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>[^,\s]+), request > maximum")
INADMISSIBLE = re.compile(r"(LocalQueue|ClusterQueue) (?P<name>\S+) (doesn't exist|is inactive)")


def condition(workload: dict, kind: str) -> dict | None:
    for found in (workload.get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return found
    return None


def holds(workload: dict, kind: str) -> bool:
    found = condition(workload, kind)
    return bool(found and found.get("status") == "True")


def milestone_words(found: dict) -> str:
    kind, reason, message = found.get("type", ""), found.get("reason", ""), found.get("message", "")
    if kind == "QuotaReserved":
        return f"Kueue reserved quota for it ({message})" if message else "Kueue reserved quota for it"
    if kind == "Admitted":
        return "Admitted by Kueue: its pods may start"
    if kind == "PodsReady":
        return "All of its pods are ready"
    if kind == "Evicted":
        return EVICTED_WORDS.get(reason, f"stopped by Kueue ({reason})").capitalize()
    if kind == "Preempted":
        return f"Preempted: {PREEMPTED_WORDS.get(reason, reason)}"
    if kind == "Requeued":
        return REQUEUED_WORDS.get(reason, f"back in the queue ({reason})").capitalize()
    if kind == "Finished":
        return f"Finished in Kueue ({reason})" + (f": {message}" if message and reason != "Succeeded" else "")
    return f"{kind}: {reason}"


def milestones(workload: dict) -> tuple[QueueMilestone, ...]:
    """Every condition that is true now, as a step of the job's timeline, oldest first."""
    steps = []
    for found in (workload.get("status") or {}).get("conditions") or []:
        at = parse_time(found.get("lastTransitionTime"))
        if found.get("status") != "True" or at is None or found.get("type") == "DeactivationTarget":
            continue
        steps.append(QueueMilestone(found["type"], found.get("reason", ""), milestone_words(found)[:500], at))
    return tuple(sorted(steps, key=lambda step: step.at))


def waiting_words(workload: dict) -> tuple[str, str]:
    """Why a job Kueue has not admitted waits, in words, and why it never will where that is so ("" otherwise)."""
    found = condition(workload, "QuotaReserved")
    message = (found or {}).get("message", "")
    if holds(workload, "Evicted") and not holds(workload, "QuotaReserved"):
        evicted = condition(workload, "Evicted") or {}
        why = EVICTED_WORDS.get(evicted.get("reason", ""), "stopped by Kueue")
        return f"Waiting to be admitted again: it was {why.removeprefix('stopped by Kueue')}".rstrip(": "), ""
    match = NO_QUOTA.search(message)
    if match:
        return (
            f"Waiting in the course's queue: it needs {match['n']} more {match['resource']} than the course's "
            f"ClusterQueue has free (flavor {match['flavor']}); it starts when the course's running jobs end or the "
            "cohort lends some",
            "",
        )
    too_big = NEVER_FITS.search(message)
    if too_big:
        never = (
            f"It asks for more {too_big['resource']} than the course's whole queue may ever hold (Kueue: request > "
            "maximum capacity). Launch it with fewer GPUs, or ask an admin to raise the quota."
        )
        return never, never
    match = INADMISSIBLE.search(message)
    if match:
        never = (
            f"Kueue cannot admit it: {match[1]} {match['name']} {match[3]}. An admin must create or start the "
            "course's queue."
        )
        return never, never
    if holds(workload, "QuotaReserved") and not holds(workload, "Admitted"):
        return "Quota reserved; waiting for Kueue's admission checks", ""
    if holds(workload, "Admitted"):
        return "Admitted by Kueue; the Job controller is starting its pods", ""
    return (f"Waiting in the course's queue ({message})" if message else "Waiting in the course's queue"), ""


def waiting(scheduler_id: str, workload: dict) -> SchedulerStatus:
    """A job with no pods yet, in Kueue's hands."""
    reason, never = waiting_words(workload)
    raw = "Admitted" if holds(workload, "Admitted") else "Queued"
    return SchedulerStatus(scheduler_id, JobState.PENDING, raw, reason[:255], never_starts=never)


@dataclass(frozen=True)
class QueueUsage:
    """A ClusterQueue's GPUs as its status and spec say: nominal quota, in use, borrowed from the cohort."""

    name: str
    cohort: str
    nominal: int
    used: int
    borrowed: int
    pending: int
    admitted: int
    preemption: dict

    @classmethod
    def of(cls, cluster_queue: dict) -> QueueUsage:
        spec, status = cluster_queue.get("spec") or {}, cluster_queue.get("status") or {}
        nominal = sum(
            _count(resource.get("nominalQuota"))
            for group in spec.get("resourceGroups") or []
            for flavor in group.get("flavors") or []
            for resource in flavor.get("resources") or []
            if resource.get("name") == GPU
        )
        usage = [
            resource
            for flavor in status.get("flavorsUsage") or []
            for resource in flavor.get("resources") or []
            if resource.get("name") == GPU
        ]
        return cls(
            name=(cluster_queue.get("metadata") or {}).get("name", ""),
            cohort=spec.get("cohort", ""),
            nominal=nominal,
            used=sum(_count(r.get("total")) for r in usage),
            borrowed=sum(_count(r.get("borrowed")) for r in usage),
            pending=int(status.get("pendingWorkloads") or 0),
            admitted=int(status.get("admittedWorkloads") or 0),
            preemption=spec.get("preemption") or {},
        )

    def in_words(self) -> str:
        words = f"ClusterQueue {self.name} uses {self.used} of its {self.nominal} GPUs"
        if self.borrowed:
            words += f", {self.borrowed} of them borrowed from cohort {self.cohort}"
        return words + "."

    def borrowing_words(self) -> str:
        """For a running job of a queue that borrows: what that means for it."""
        return (
            f"The course's queue borrows {self.borrowed} GPU(s) from cohort {self.cohort}; they can be reclaimed "
            "when another course submits, and a job on them may then be preempted"
        )


def _count(quantity) -> int:
    text = str(quantity or 0).strip()
    try:
        return int(float(text[:-1]) / 1000) if text.endswith("m") else int(float(text))
    except ValueError:
        return 0


def cluster_queue_of(workload: dict) -> str:
    return ((workload.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
