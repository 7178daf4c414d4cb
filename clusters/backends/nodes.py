"""A compute node as a scheduler describes it: plain data that the backend interface, reservations and the telemetry
sources share (a module of its own, so reservations.py needs nothing else of base.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NodeInfo:
    """A compute node as the scheduler describes it; the telemetry collector streams from it."""

    name: str
    address: str
    gpus: int
    state: str
