"""The portal's #SBATCH header, as slurmrestd job properties.

slurmrestd (22.05) ignores #SBATCH lines in an inline script, so the header the portal wrote
(slurm_family/script/header.py: job name, partition, nodes, tasks, GPUs, CPUs, memory, time) is read back here into
the job object. Only the leading comment block counts, as with sbatch; an option this table does not know is refused
rather than dropped, so a job never runs with less than it asked for.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .errors import RestRejected

_DIRECTIVE = re.compile(r"^#SBATCH\s+--([a-z-]+)=(\S+)\s*$")
_GRES = re.compile(r"^gpu(?::[A-Za-z0-9_.-]+)?:\d+$")


def _int(value: str) -> int:
    if not value.isdigit():
        raise ValueError(value)
    return int(value)


def _memory_mb(value: str) -> int:
    match = re.fullmatch(r"(\d+)([MGT]?)", value.upper())  # sbatch's default unit is MB
    if not match:
        raise ValueError(value)
    return int(match.group(1)) * {"": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[match.group(2)]


def _gres(value: str) -> str:
    if not _GRES.match(value):
        raise ValueError(value)
    return value


# sbatch option → (job property, how its value is read)
OPTIONS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "job-name": ("name", str),
    "partition": ("partition", str),
    "nodes": ("nodes", lambda v: [_int(v), _int(v)]),
    "ntasks-per-node": ("tasks_per_node", _int),
    "gres": ("gres", _gres),
    "cpus-per-task": ("cpus_per_task", _int),
    "mem": ("memory_per_node", _memory_mb),
    "time": ("time_limit", _int),
}


def header_lines(script: str) -> list[str]:
    """The leading comment block after the shebang: where sbatch reads its directives."""
    lines = script.splitlines()
    if lines and lines[0].startswith("#!"):
        lines = lines[1:]
    block = []
    for line in lines:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        block.append(stripped)
    return block


def job_properties(script: str) -> dict:
    """The job properties the script's #SBATCH header asks for."""
    properties: dict = {}
    for line in header_lines(script):
        if not line.startswith("#SBATCH"):
            continue
        match = _DIRECTIVE.match(line)
        option = OPTIONS.get(match.group(1)) if match else None
        if match is None or option is None:
            raise RestRejected(f"This cluster's REST API cannot take “{line}”; tell your instructor.")
        name, read = option
        try:
            properties[name] = read(match.group(2))
        except (ValueError, KeyError, IndexError):
            raise RestRejected(f"“{line}” has a value the REST API cannot take; tell your instructor.") from None
    return properties
