"""What a partition of a cluster can ever give a job, learnt at Test connection and kept on the cluster row.

Plain data below the models (Cluster.limits_of) and the backends (which learn it); base.py hands it on.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PartitionLimits:
    """What one partition (queue) of a cluster can ever give a job; None means no limit."""

    name: str
    nodes: int  # every node in the partition, whatever its state
    gpus_per_node: int  # on its best-equipped node
    max_nodes_per_job: int | None = None
    max_minutes: int | None = None
    default: bool = False  # where jobs go when they name no partition

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    def describe(self) -> str:
        per_job = f"at most {self.max_nodes_per_job} per job" if self.max_nodes_per_job else "no per-job node limit"
        time = f"at most {self.max_minutes} minutes" if self.max_minutes else "no time limit"
        default = " (default)" if self.default else ""
        return (
            f"partition {self.name}{default}: {self.nodes} node(s), {per_job}, {self.gpus_per_node} GPU(s) per node, "
            f"{time}"
        )

    @classmethod
    def from_dict(cls, data: dict) -> PartitionLimits:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__ if name in data})
