"""SLURM host lists as squeue, scontrol and slurmrestd print them, for both SLURM kinds."""

from __future__ import annotations

import re


def expand_hostlist(text: str) -> list[str]:
    """SLURM host lists: "gpu[01-03,07],login" → gpu01 gpu02 gpu03 gpu07 login (zero padding kept)."""
    hosts: list[str] = []
    for prefix, ranges, plain in re.findall(r"([^,\[]+)\[([^\]]+)\]|([^,\[\]]+)", text):
        if plain:
            hosts.append(plain)
            continue
        for part in ranges.split(","):
            first, _, last = part.partition("-")
            width = len(first)
            for n in range(int(first), int(last or first) + 1):
                hosts.append(f"{prefix}{n:0{width}d}")
    return hosts
