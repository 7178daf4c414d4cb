"""Why a job waits in Kueue: its place in the course's LocalQueue and ClusterQueue, read from Kueue's visibility API
(pendingworkloads, one call per LocalQueue that holds a waiting job of the portal), the ClusterQueue's GPUs against
its quota, and its preemption policy in words. Where the portal's account may not read the visibility API the place
is "unknown", and the page says why."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import cache

from core.choices import JobState

from ...base import BackendError, PermissionDenied
from ...queue import QueuedJob, QueueView
from .api import KubeAPI, NotFound
from .kueue import LOCAL_QUEUE, PENDING_IN_LOCAL_QUEUE, preemption_in_words
from .kueue_status import QueueUsage

LOCAL_QUEUE_CACHE_SECONDS = 3600
NOTE = (
    "Kueue admits jobs in its queue's order as the course's quota frees; the estimated start is the portal's own, "
    "learnt from how long this queue's earlier jobs waited."
)
NO_VISIBILITY = (
    "Position unknown: the portal's account may not read Kueue's visibility API (get localqueues/pendingworkloads in "
    "visibility.kueue.x-k8s.io); an admin can grant it."
)


@dataclass(frozen=True)
class Waiting:
    """One of the portal's jobs that Kueue has not admitted, as this cycle's poll found it."""

    scheduler_id: str
    namespace: str
    local_queue: str
    workload: str
    cluster_queue: str  # "" until Kueue has said which (a pending Workload names only its LocalQueue)
    reason: str


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def view(api: KubeAPI, waiting: list[Waiting], usage: dict[str, QueueUsage]) -> QueueView:
    """`usage`: this cycle's ClusterQueues by name."""
    queue_of = {f"{w.namespace}/{w.local_queue}": cluster_queue_for(api, w, usage) for w in waiting}
    places: dict[str, dict] = {}
    refused = False
    for namespace, local_queue in sorted({(w.namespace, w.local_queue) for w in waiting}):
        try:
            summary = api.get(f"{PENDING_IN_LOCAL_QUEUE.item(namespace, local_queue)}/pendingworkloads")
        except PermissionDenied:
            refused = True
            continue
        except NotFound:
            continue
        items = summary.get("items") or []
        for item in items:
            name = (item.get("metadata") or {}).get("name", "")
            places[f"{namespace}/{name}"] = {**item, "inLocalQueue": len(items)}
    jobs = tuple(_queued(w, places.get(f"{w.namespace}/{w.workload}"), usage, queue_of, refused) for w in waiting)
    return QueueView(jobs=jobs, ordered=False, note=NOTE, estimates_from_history=True)


def _queued(waiting: Waiting, place: dict | None, usage: dict, queue_of: dict, refused: bool) -> QueuedJob:
    cluster_queue = waiting.cluster_queue or queue_of.get(f"{waiting.namespace}/{waiting.local_queue}", "")
    found = usage.get(cluster_queue)
    sentences = []
    if found is not None:
        sentences.append(found.in_words())
        sentences.append(preemption_in_words(found.preemption, found.cohort))
    if place is not None:
        in_local, in_cluster = int(place.get("positionInLocalQueue", 0)) + 1, int(place["positionInClusterQueue"]) + 1
        pending = max(found.pending if found else 0, in_cluster)
        where = (
            f"{ordinal(in_local)} of {place['inLocalQueue']} waiting in the course's queue (LocalQueue "
            f"{waiting.local_queue}); {ordinal(in_cluster)} of {pending} in ClusterQueue {cluster_queue}."
        )
        reason, position = f"{where} {waiting.reason}.", (in_cluster, pending)
    elif refused:
        reason, position = f"{NO_VISIBILITY} {waiting.reason}.", None
    else:
        reason, position = f"{waiting.reason}.", None
    return QueuedJob(
        waiting.scheduler_id,
        JobState.PENDING,
        partition=f"ClusterQueue {cluster_queue}" if cluster_queue else f"LocalQueue {waiting.local_queue}",
        reason=reason,
        place=position,
        explained=tuple(sentences),
    )


def cluster_queue_for(api: KubeAPI, waiting: Waiting, usage: dict[str, QueueUsage]) -> str:
    """The ClusterQueue a LocalQueue feeds: the course's own (same name) where the portal manages it, else the
    LocalQueue's spec, read once and remembered (a LocalQueue's ClusterQueue does not change)."""
    if waiting.local_queue in usage:
        return waiting.local_queue
    key = f"gpulab:kueue-lq:{api.cluster.pk}:{waiting.namespace}/{waiting.local_queue}"
    found = cache.get(key)
    if found is None:
        try:
            found = (api.get(LOCAL_QUEUE.item(waiting.namespace, waiting.local_queue)).get("spec") or {}).get(
                "clusterQueue", ""
            )
        except BackendError:
            return ""
        cache.set(key, found, LOCAL_QUEUE_CACHE_SECONDS)
    return found


def cluster_queues(api: KubeAPI, kind) -> dict[str, QueueUsage]:
    """Every ClusterQueue in one list: the portal's courses' and any an admin's LocalQueue points to."""
    try:
        return {usage.name: usage for usage in map(QueueUsage.of, api.list(kind.collection()))}
    except BackendError:  # usage is a figure on the page; the poll goes on without it
        return {}
