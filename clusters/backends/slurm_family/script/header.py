"""The portal's own #SBATCH header: the option it writes for each resource parameter (core/templating/resources.py).

A header option's value is a validated token (a choice of the cluster's, or an int), never free text. Every row of
the resource table has a line here, or is folded into another row's option (gpu_type into --gres).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from core.templating.resources import RESOURCES


def _gres(values: Mapping[str, Any]) -> str:
    gpus, gpu_type = int(values["gpus_per_node"]), values.get("gpu_type")
    return f"gpu:{gpu_type}:{gpus}" if gpu_type else f"gpu:{gpus}"


@dataclass(frozen=True)
class Directive:
    name: str  # the resource parameter's name
    option: str = ""  # the #SBATCH option it sets; "" where another row's option carries it
    text: Callable[[Mapping[str, Any]], str] | None = None  # the option's value from all values; default: the int

    def line(self, values: Mapping[str, Any]) -> str | None:
        """This resource's #SBATCH line, or None when the job does not ask for it (absent, 0 or empty)."""
        if not self.option or not values.get(self.name):
            return None
        value = self.text(values) if self.text else str(int(values[self.name]))
        return f"#SBATCH {self.option}={value}"


DIRECTIVES = {
    d.name: d
    for d in (
        Directive("partition", "--partition", lambda v: str(v["partition"])),
        Directive("nodes", "--nodes"),
        Directive("ntasks_per_node", "--ntasks-per-node"),
        Directive("gpus_per_node", "--gres", _gres),
        Directive("gpu_type"),  # folded into --gres
        Directive("cpus_per_task", "--cpus-per-task"),
        Directive("mem_gb", "--mem", lambda v: f"{int(v['mem_gb'])}G"),
        Directive("time_minutes", "--time"),
    )
}


def resource_directives(values: Mapping[str, Any]) -> list[str]:
    """The #SBATCH lines for the resources a job asks for, in the resource table's order."""
    return [line for name in RESOURCES if (line := DIRECTIVES[name].line(values)) is not None]
