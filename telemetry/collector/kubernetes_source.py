"""The collector's "metrics-api" source (Kubernetes): pod and node usage from metrics.k8s.io through the backend
interface (task_usage, node_usage; a task is a pod, named "namespace/pod"), GPUs from dcgm-exporter through the
cluster's Prometheus. A kind names it by that name (Kind.telemetry_source); the collector stands above the kinds and
asks only the registry for the backend.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

import urllib3

from clusters.backends.base import NotSupported
from clusters.kinds import get_backend, kind_of
from telemetry.collector.sources import Periodic, running_jobs
from telemetry.live import LiveState, PodLive
from telemetry.models import Node
from telemetry.parsers import DCGM_QUERY, DcgmGpu, parse_dcgm_vector

if TYPE_CHECKING:
    from clusters.models import Cluster

logger = logging.getLogger(__name__)


class MetricsApiSource(Periodic):
    """Pod and node usage from metrics.k8s.io every 15 s (its own resolution), DCGM GPUs from Prometheus."""

    interval = 15.0

    def __init__(self, state: LiveState, cluster: Cluster, stop: threading.Event):
        super().__init__(f"k8s-{cluster.name}", stop)
        self.state, self.cluster = state, cluster
        self.http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=5, read=10), retries=False)

    def cycle(self) -> None:
        self.cluster.refresh_from_db()
        backend = get_backend(self.cluster)
        running = running_jobs(cluster=self.cluster)
        refs = {job.job_id: job for job in running.values()}
        pods: dict[str, PodLive] = {}
        pod_jobs: dict[str, str] = {}
        now = time.time()
        try:
            usage = backend.task_usage(sorted(running)) if running else []
        except NotSupported:
            usage = []
        for task in usage:
            if task.job_id not in refs:
                continue
            pod_jobs[task.task] = task.job_id
            live = pods.setdefault(task.job_id, PodLive(refs[task.job_id], 0.0, 0, now))
            live.cpu_millis += task.cpu_millis
            live.memory_bytes += task.memory_bytes
        self._node_usage(backend)
        dcgm: dict[str, list[DcgmGpu]] = {}
        for gpu in self.dcgm():
            job_id = pod_jobs.get(f"{gpu.namespace}/{gpu.pod}")
            if job_id:
                dcgm.setdefault(job_id, []).append(gpu)
        self.state.put_pods(self.cluster.pk, pods, dcgm)

    def _node_usage(self, backend) -> None:
        try:
            usages = backend.node_usage()
        except NotSupported:
            return
        for usage in usages:
            node, _ = Node.objects.get_or_create(cluster=self.cluster, name=usage.node)
            self.state.node(node.pk, self.cluster.pk, node.name)
            self.state.put_usage(node.pk, usage.cpu_millis, usage.memory_bytes)

    def dcgm(self) -> list[DcgmGpu]:
        """dcgm-exporter's fields for every GPU, one instant query; [] when the cluster has no Prometheus."""
        url = kind_of(self.cluster.kind).gpu_metrics_url(self.cluster).rstrip("/")
        if not url:
            return []
        try:
            answer = self.http.request("GET", f"{url}/api/v1/query", fields={"query": DCGM_QUERY})
        except urllib3.exceptions.HTTPError as exc:
            logger.warning("telemetry: Prometheus of %s did not answer: %s", self.cluster.name, exc)
            return []
        if answer.status != 200:
            logger.warning("telemetry: Prometheus of %s answered %s", self.cluster.name, answer.status)
            return []
        return parse_dcgm_vector(answer.data.decode(errors="replace"))
