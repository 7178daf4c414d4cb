"""What the Kubernetes kind readies before a submit (Kind.prepare_submit): the student's or course's namespace with
its quota and limits, and the course's Kueue queue where the cluster runs Kueue. Handed to the backend in
SubmitRequest.prepared."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NamespacePlan:
    """A Kubernetes namespace the portal owns, with the quota and default limits it must carry."""

    name: str
    labels: dict[str, str]
    quota: dict[str, str]  # ResourceQuota spec.hard
    limits: dict[str, dict[str, str]]  # LimitRange container item: default, defaultRequest, max
    queue: QueuePlan | None = None  # Kueue's queue for the namespace's jobs, where the cluster runs Kueue


@dataclass(frozen=True)
class QueuePlan:
    """Kubernetes with Kueue: the LocalQueue a course's namespaces send jobs to, and the ClusterQueue the portal keeps
    for the course; None where the course names an existing LocalQueue, which is only checked."""

    local_queue: str
    cluster_queue: dict | None = None
