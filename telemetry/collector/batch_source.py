"""The collector's "nodes-over-ssh" source (both SLURM kinds): the scheduler's nodes and which job holds which GPU
through the backend interface (nodes, gpu_allocations: `scontrol show node` and `scontrol show job -d` over SSH, or
slurmrestd), and each node's GPUs streamed over SSH (nvidia-smi, iostat). A kind names it by that name
(Kind.telemetry_source), so a slurmrestd cluster whose service account has an SSH login is measured the same way.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from clusters.kinds import get_backend
from telemetry.collector.node_stream import NodeStream, NodeTarget
from telemetry.collector.sources import Periodic, running_jobs
from telemetry.models import Node

if TYPE_CHECKING:
    from clusters.models import Cluster
    from telemetry.live import LiveState


class NodesOverSshSource(Periodic):
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
