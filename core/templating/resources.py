"""The resource table: template parameters with these names ask the scheduler for resources.

One row per parameter gives its required type, the #SBATCH option the portal writes for it, and how messages name
it. The schema check (params.py), the portal's #SBATCH header (rendering.py) and the advice to name a
parameter rather than write an #SBATCH line (script_safety.py) all read this table, so a resource added here is
validated, written and explained at once. A header option's value is a validated token (a choice of the cluster's,
or an int), never free text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


def _gres(values: Mapping[str, Any]) -> str:
    gpus, gpu_type = int(values["gpus_per_node"]), values.get("gpu_type")
    return f"gpu:{gpu_type}:{gpus}" if gpu_type else f"gpu:{gpus}"


@dataclass(frozen=True)
class Resource:
    name: str  # the template parameter's name
    type: str  # the only type a parameter of that name may have
    label: str  # how a message names it when the template gives no label
    option: str = ""  # the #SBATCH option it sets; "" where another row's option carries it
    text: Callable[[Mapping[str, Any]], str] | None = None  # the option's value from all values; default: the int

    def directive(self, values: Mapping[str, Any]) -> str | None:
        """This resource's #SBATCH line, or None when the job does not ask for it (absent, 0 or empty)."""
        if not self.option or not values.get(self.name):
            return None
        value = self.text(values) if self.text else str(int(values[self.name]))
        return f"#SBATCH {self.option}={value}"


RESOURCES = {
    r.name: r
    for r in (
        Resource("partition", "choice", "Partition", "--partition", lambda v: str(v["partition"])),
        Resource("nodes", "int", "Nodes", "--nodes"),
        Resource("ntasks_per_node", "int", "Tasks per node", "--ntasks-per-node"),
        Resource("gpus_per_node", "int", "GPUs per node", "--gres", _gres),
        Resource("gpu_type", "choice", "GPU type"),  # folded into --gres
        Resource("cpus_per_task", "int", "CPUs per task", "--cpus-per-task"),
        Resource("mem_gb", "int", "Memory (GB)", "--mem", lambda v: f"{int(v['mem_gb'])}G"),
        Resource("time_minutes", "int", "Time", "--time"),
    )
}


def resource_directives(values: Mapping[str, Any]) -> list[str]:
    """The #SBATCH lines for the resources a job asks for, in the table's order."""
    return [line for r in RESOURCES.values() if (line := r.directive(values)) is not None]


def names_in_words() -> str:
    """The resource parameters' names as a message lists them: "partition, nodes, … or time_minutes"."""
    *rest, last = RESOURCES
    return f"{', '.join(rest)} or {last}"
