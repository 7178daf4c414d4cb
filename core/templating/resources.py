"""The resource table: template parameters with these names ask the scheduler for resources.

One row per parameter gives its required type and how messages name it. The schema check (params.py) and the advice
to name a parameter rather than write the scheduler's own line (a kind's script checks) read this table; how a kind
asks its scheduler for each resource is the kind's (a SLURM batch script's #SBATCH header writes a line for each row).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    name: str  # the template parameter's name
    type: str  # the only type a parameter of that name may have
    label: str  # how a message names it when the template gives no label


RESOURCES = {
    r.name: r
    for r in (
        Resource("partition", "choice", "Partition"),
        Resource("nodes", "int", "Nodes"),
        Resource("ntasks_per_node", "int", "Tasks per node"),
        Resource("gpus_per_node", "int", "GPUs per node"),
        Resource("gpu_type", "choice", "GPU type"),
        Resource("cpus_per_task", "int", "CPUs per task"),
        Resource("mem_gb", "int", "Memory (GB)"),
        Resource("time_minutes", "int", "Time"),
    )
}


def names_in_words() -> str:
    """The resource parameters' names as a message lists them: "partition, nodes, … or time_minutes"."""
    *rest, last = RESOURCES
    return f"{', '.join(rest)} or {last}"
