"""What a sweep is before it exists: the swept parameters' typed values, expanded into runs (grid or zip).

Pure functions of the template's schema and what the student asked for, so the launch form, the API and the launch
itself say the same thing, and the expansion is tested without a cluster.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.templating.params import Param

from .models import SweepMode

MAX_SWEPT = 3  # parameters one sweep may vary
MAX_RUNS = 100  # runs one sweep may make


class SweepInvalid(Exception):
    """The sweep as asked cannot be made; `errors` maps a parameter (or "sweep") to what to change."""

    def __init__(self, errors: dict[str, str]):
        super().__init__(" ".join(errors.values()))
        self.errors = errors


@dataclass(frozen=True)
class SweepPlan:
    swept: dict[str, list[Any]]  # name → typed values, in the order asked
    mode: str
    runs: list[dict[str, Any]]  # each run's swept values, in task order

    @property
    def size(self) -> int:
        return len(self.runs)


def expand(swept: Mapping[str, Sequence[Any]], mode: str) -> list[dict[str, Any]]:
    """Grid: every combination, the last parameter varying fastest. Zip: the i-th value of each list together (the
    lists must be as long as each other; plan() says so first)."""
    names = list(swept)
    if mode == SweepMode.ZIP:
        return [dict(zip(names, row, strict=True)) for row in zip(*swept.values(), strict=True)]
    return [dict(zip(names, row, strict=True)) for row in itertools.product(*swept.values())]


def plan(schema: list[Param], asked: Mapping[str, Sequence[Any]], mode: str) -> SweepPlan:
    """The typed sweep, or SweepInvalid naming every parameter at fault and what to do."""
    if mode not in SweepMode.values:
        raise SweepInvalid({"mode": "Pick grid (every combination) or zip (the lists side by side)."})
    params = {p.name: p for p in schema}
    errors: dict[str, str] = {}
    if not asked:
        raise SweepInvalid({"sweep": "Pick at least one parameter to sweep, with two or more values."})
    if len(asked) > MAX_SWEPT:
        raise SweepInvalid({"sweep": f"Sweep at most {MAX_SWEPT} parameters at once."})
    swept: dict[str, list[Any]] = {}
    for name, raw_values in asked.items():
        param = params.get(name)
        if param is None:
            errors[name] = "This template has no such parameter."
        elif not param.sweep:
            errors[name] = f"{param.label} cannot be swept in this template."
        else:
            values = _typed(param, raw_values, errors)
            if values is not None:
                swept[name] = values
    if errors:
        raise SweepInvalid(errors)
    if mode == SweepMode.ZIP and len({len(v) for v in swept.values()}) > 1:
        lengths = ", ".join(f"{params[n].label} {len(v)}" for n, v in swept.items())
        raise SweepInvalid({"mode": f"Zipped lists must be as long as each other ({lengths}), or pick grid."})
    runs = expand(swept, mode)
    if len(runs) > MAX_RUNS:
        raise SweepInvalid({"sweep": f"This sweep makes {len(runs)} runs; at most {MAX_RUNS}. Sweep fewer values."})
    return SweepPlan(swept=swept, mode=mode, runs=runs)


def _typed(param: Param, raw_values: Sequence[Any], errors: dict[str, str]) -> list[Any] | None:
    if isinstance(raw_values, str | bytes) or not isinstance(raw_values, Sequence) or not raw_values:
        errors[param.name] = "Give a list of values."
        return None
    values: list[Any] = []
    for raw in raw_values:
        try:
            value = param.clean_sweep_value(raw)
        except ValueError as exc:
            errors[param.name] = f"{_shown(raw)}: {exc}"
            return None
        if value in values:
            errors[param.name] = f"{_shown(raw)} is listed twice."
            return None
        values.append(value)
    return values


def _shown(raw: Any) -> str:
    return repr(raw) if not isinstance(raw, str) else f"“{raw[:40]}”"
