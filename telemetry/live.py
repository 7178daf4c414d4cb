"""What the collector knows right now, shared by its reader threads and its publisher.

Readers (one per node stream, one per cluster for attribution, Kubernetes metrics and logs) write here under
one lock; the publisher takes what changed since its last tick. Nothing in here touches the database. It stands
beside the collector, not in it, because frames.py builds from its snapshot and the collector uses frames.py.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from telemetry.parsers import DcgmGpu, GpuSample, HostSample, TrainerPoint

# A node whose newest GPU block is older than this is shown as stale: nvidia-smi prints every second.
STALE_SECONDS = 3.5


@dataclass(frozen=True)
class JobRef:
    """A running job as telemetry needs it: who owns it and which course watches it."""

    job_id: str
    owner: str
    course_id: int
    gpus: int
    template: str = ""  # the template's name, for legends


@dataclass
class NodeLive:
    node_id: int
    cluster_id: int
    name: str
    gpus: dict[int, GpuSample] = field(default_factory=dict)
    gpus_at: float = 0.0
    host: HostSample | None = None
    host_at: float = 0.0
    memory: tuple[int, int] | None = None  # used, total bytes
    has_gpu: bool | None = None
    usage: tuple[float, int] | None = None  # Kubernetes: cpu millicores, memory bytes (metrics.k8s.io)
    status: str = "connecting"
    changed: bool = False  # something arrived since the publisher last looked

    def stale(self, now: float) -> bool:
        newest = max(self.gpus_at, self.host_at)
        return newest == 0.0 or now - newest > STALE_SECONDS


@dataclass
class PodLive:
    """A Kubernetes job's pods summed, as metrics.k8s.io last reported them."""

    job: JobRef
    cpu_millis: float
    memory_bytes: int
    at: float


class LiveState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.nodes: dict[int, NodeLive] = {}
        # Per cluster, replaced whole by each attribution cycle: (job, node id, GPU indexes).
        self.allocations: dict[int, list[tuple[JobRef, int, tuple[int, ...]]]] = {}
        # Kubernetes, per cluster, replaced whole by each metrics cycle; by job id.
        self.pods: dict[int, dict[str, PodLive]] = {}
        self.dcgm: dict[int, dict[str, list[DcgmGpu]]] = {}
        self.k8s_changed: set[str] = set()  # job ids with new pod or DCGM numbers
        self.trainer: dict[str, list[TrainerPoint]] = defaultdict(list)  # new points, by job id
        self.followed: dict[str, JobRef] = {}  # running jobs whose logs are followed, with or without GPUs
        self.jobs: dict[str, JobRef] = {}  # every job some source reported as running

    # -- writers ------------------------------------------------------------------------------------------------
    def node(self, node_id: int, cluster_id: int, name: str) -> NodeLive:
        with self.lock:
            live = self.nodes.get(node_id)
            if live is None:
                live = self.nodes[node_id] = NodeLive(node_id, cluster_id, name)
            return live

    def put_gpus(self, node_id: int, samples: list[GpuSample], at: float | None = None) -> None:
        with self.lock:
            live = self.nodes[node_id]
            live.gpus = {s.index: s for s in samples}
            live.gpus_at = at or time.time()
            live.has_gpu = True
            live.changed = True

    def put_host(self, node_id: int, host: HostSample | None, memory: tuple[int, int] | None) -> None:
        with self.lock:
            live = self.nodes[node_id]
            live.host, live.memory, live.host_at, live.changed = host, memory, time.time(), True

    def put_usage(self, node_id: int, cpu_millis: float, memory_bytes: int) -> None:
        with self.lock:
            live = self.nodes[node_id]
            live.usage, live.host_at = (cpu_millis, memory_bytes), time.time()
            live.status, live.changed = "metrics", True

    def set_node_status(self, node_id: int, status: str, *, has_gpu: bool | None = None) -> None:
        with self.lock:
            live = self.nodes[node_id]
            live.status, live.changed = status, True
            if has_gpu is not None:
                live.has_gpu = has_gpu

    def put_allocations(self, cluster_id: int, allocations: list[tuple[JobRef, int, tuple[int, ...]]]) -> None:
        with self.lock:
            self.allocations[cluster_id] = allocations
            self._reindex_jobs()

    def put_pods(self, cluster_id: int, pods: dict[str, PodLive], dcgm: dict[str, list[DcgmGpu]]) -> None:
        with self.lock:
            self.pods[cluster_id], self.dcgm[cluster_id] = pods, dcgm
            self.k8s_changed |= set(pods) | set(dcgm)
            self._reindex_jobs()

    def add_trainer_points(self, job_id: str, points: list[TrainerPoint]) -> None:
        with self.lock:
            self.trainer[job_id].extend(points)

    def put_followed(self, jobs: dict[str, JobRef]) -> None:
        with self.lock:
            self.followed = jobs
            self._reindex_jobs()

    def _reindex_jobs(self) -> None:
        jobs = dict(self.followed)
        jobs.update({job.job_id: job for allocations in self.allocations.values() for job, _, _ in allocations})
        jobs.update({job_id: pod.job for pods in self.pods.values() for job_id, pod in pods.items()})
        self.jobs = jobs

    # -- the publisher's view -----------------------------------------------------------------------------------
    def take(self) -> Snapshot:
        """A consistent copy of everything, and what changed since the last take (which is then reset)."""
        with self.lock:
            changed_nodes = {n for n, live in self.nodes.items() if live.changed}
            for live in self.nodes.values():
                live.changed = False
            snapshot = Snapshot(
                nodes={n: _copy_node(live) for n, live in self.nodes.items()},
                allocations=[a for allocations in self.allocations.values() for a in allocations],
                pods={j: pod for pods in self.pods.values() for j, pod in pods.items()},
                dcgm={j: list(gpus) for by_job in self.dcgm.values() for j, gpus in by_job.items()},
                trainer={j: points for j, points in self.trainer.items() if points},
                changed_nodes=changed_nodes,
                changed_pods=set(self.k8s_changed),
                jobs=dict(self.jobs),
            )
            self.trainer.clear()
            self.k8s_changed.clear()
            return snapshot


def _copy_node(live: NodeLive) -> NodeLive:
    return NodeLive(
        live.node_id,
        live.cluster_id,
        live.name,
        dict(live.gpus),
        live.gpus_at,
        live.host,
        live.host_at,
        live.memory,
        live.has_gpu,
        live.usage,
        live.status,
    )


@dataclass
class Snapshot:
    nodes: dict[int, NodeLive]
    allocations: list[tuple[JobRef, int, tuple[int, ...]]]
    pods: dict[str, PodLive]
    dcgm: dict[str, list[DcgmGpu]]
    trainer: dict[str, list[TrainerPoint]]
    changed_nodes: set[int]
    changed_pods: set[str]
    jobs: dict[str, JobRef]
