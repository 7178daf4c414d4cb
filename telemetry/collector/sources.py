"""The collector's periodic readers: SLURM attribution and nodes, and job logs (each kind names its source:
Kind.telemetry_source; Kubernetes' lives in clusters/backends/kubernetes/telemetry.py).

Each runs in its own thread and asks its cluster once per cycle for everything (one `scontrol show job -d`,
one pod-metrics list per namespace), then writes the answer into LiveState. A cluster that does not answer
keeps its last picture; the frames turn it stale on their own.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from django.db import close_old_connections

from clusters.backends.base import BackendError
from clusters.kinds import get_backend
from clusters.models import Cluster
from core.choices import JobState
from jobs.logs import read_log
from jobs.models import Job
from telemetry.live import JobRef, LiveState
from telemetry.models import Node
from telemetry.parsers import parse_trainer_line

from .node_stream import NodeStream, NodeTarget

logger = logging.getLogger(__name__)


class Periodic(threading.Thread):
    """Runs `cycle` every `interval` seconds until stopped; errors are logged, never fatal."""

    interval = 5.0

    def __init__(self, name: str, stop: threading.Event):
        super().__init__(name=name, daemon=True)
        self.stop_event = stop
        self.cycles = 0

    def run(self) -> None:
        while not self.stop_event.is_set():
            started = time.monotonic()
            try:
                self.cycle()
            except BackendError as exc:
                logger.warning("telemetry: %s: %s", self.name, exc)
            except Exception:
                logger.exception("telemetry: %s failed", self.name)
            finally:
                close_old_connections()
            self.cycles += 1
            self.stop_event.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def cycle(self) -> None:
        raise NotImplementedError


def running_jobs(**filters) -> dict[str, JobRef]:
    """Running portal jobs (with a scheduler id) matching `filters`, by scheduler id, in one query."""
    rows = (
        Job.objects.filter(state=JobState.RUNNING, **filters)
        .exclude(scheduler_id="")
        .values_list("scheduler_id", "pk", "owner__username", "course_id", "gpus", "template__name")
    )
    return {sid: JobRef(str(pk), *fields) for sid, pk, *fields in rows}


class SlurmSource(Periodic):
    """Nodes from `scontrol show node` (every minute), GPUs per job from `scontrol show job -d` (every cycle)."""

    interval = 5.0
    nodes_every = 60.0

    def __init__(self, state: LiveState, cluster: Cluster, stop: threading.Event):
        super().__init__(f"slurm-{cluster.name}", stop)
        self.state, self.cluster = state, cluster
        self.streams: dict[int, NodeStream] = {}
        self.node_ids: dict[str, int] = {}
        self._nodes_at = 0.0

    def cycle(self) -> None:
        self.cluster.refresh_from_db()
        backend = get_backend(self.cluster)
        if time.monotonic() - self._nodes_at > self.nodes_every:
            self._sync_nodes(backend)
            self._nodes_at = time.monotonic()
        allocations = backend.gpu_allocations()
        jobs = running_jobs(cluster=self.cluster, scheduler_id__in=sorted({a.scheduler_id for a in allocations}))
        self.state.put_allocations(
            self.cluster.pk,
            [
                (jobs[a.scheduler_id], self.node_ids[a.node], a.indexes)
                for a in allocations
                if a.scheduler_id in jobs and a.node in self.node_ids
            ],
        )

    def _sync_nodes(self, backend) -> None:
        for info in backend.nodes():
            same_host = info.address == self.cluster.host
            node, _ = Node.objects.update_or_create(
                cluster=self.cluster,
                name=info.name,
                defaults={"address": info.address, "gpus": info.gpus, "scheduler_state": info.state},
                create_defaults={
                    "address": info.address,
                    "gpus": info.gpus,
                    "scheduler_state": info.state,
                    "ssh_port": self.cluster.port if same_host else 22,
                },
            )
            self.node_ids[node.name] = node.pk
            self.state.node(node.pk, self.cluster.pk, node.name)
            self._ensure_stream(node, backend.account)

    def _ensure_stream(self, node: Node, account) -> None:
        current = self.streams.get(node.pk)
        if current is not None and current.is_alive():
            return
        host_key = node.pinned_host_key()
        if not host_key:
            self.state.set_node_status(
                node.pk, "SSH host key not pinned: an admin must pin it on the node's admin page before it is sampled."
            )
            return
        target = NodeTarget(node.address, node.ssh_port, host_key, f"{node.name} ({self.cluster.display_name})")
        stream = NodeStream(self.state, node.pk, target, account, self.stop_event)
        self.streams[node.pk] = stream
        stream.start()


class LogSource(Periodic):
    """Follows the log of every running job: new text goes to the job's page, trainer lines become curves."""

    interval = 2.0

    def __init__(self, state: LiveState, out: queue.Queue, stop: threading.Event, clusters: Callable[[], list[int]]):
        super().__init__("logs", stop)
        self.state, self.out, self.clusters = state, out, clusters
        self.offsets: dict[str, int] = {}
        self.partial: dict[str, str] = {}

    def cycle(self) -> None:
        followed = running_jobs(cluster_id__in=self.clusters())
        self.state.put_followed({job.job_id: job for job in followed.values()})
        running = list(
            Job.objects.filter(pk__in=[job.job_id for job in followed.values()]).select_related("cluster", "account")
        )
        for job in running:
            try:
                self._follow(job)
            except BackendError as exc:
                logger.info("telemetry: log of %s: %s", job.pk, exc)
        alive = {str(job.pk) for job in running}
        for job_id in [j for j in self.offsets if j not in alive]:
            self.offsets.pop(job_id, None)
            self.partial.pop(job_id, None)

    def _follow(self, job: Job) -> None:
        job_id = str(job.pk)
        for _ in range(8):  # at most 8 chunks per cycle, so one chatty job cannot hold the others back
            offset = self.offsets.get(job_id, 0)
            chunk = read_log(job, offset)
            if not chunk.data:
                return
            self.offsets[job_id] = chunk.offset
            self.out.put((job_id, offset, chunk.offset, chunk.data))
            text = self.partial.get(job_id, "") + chunk.data
            *lines, self.partial[job_id] = text.split("\n")
            points = [p for p in map(parse_trainer_line, lines) if p is not None]
            if points:
                self.state.add_trainer_points(job_id, points)
            if chunk.eof:
                return
