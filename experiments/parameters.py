"""The parameter table of a comparison: every parameter of the runs, marked where the runs differ, and the legend
name each run gets from what differs ("precision=fp32 · batch_size=64").

Rows follow the templates' own order. Who launched a run and its template are rows too, when they differ (an
instructor's comparison of a class's runs); the viewer may see every run shown, so naming them leaks nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from jobs.models import Job

LEGEND_PARAMS = 3  # a legend entry names at most this many differences; the table shows them all


@dataclass(frozen=True)
class ParamRow:
    name: str
    label: str
    values: list[str]  # one per run, in the runs' order; "—" where a run has no such parameter
    differs: bool


def text(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def parameter_rows(jobs: Sequence[Job]) -> list[ParamRow]:
    rows = [
        _row("template", "Template", [job.template.name for job in jobs]),
        _row("student", "Student", [job.owner.username for job in jobs]),
    ]
    for name, label in _names(jobs):
        raw = [json.dumps(job.params.get(name), sort_keys=True) for job in jobs]
        shown = [text(job.params.get(name)) for job in jobs]
        rows.append(ParamRow(name, label, shown, len(set(raw)) > 1))
    return rows


def _row(name: str, label: str, values: list[str]) -> ParamRow:
    return ParamRow(name, label, values, len(set(values)) > 1)


def _names(jobs: Sequence[Job]) -> list[tuple[str, str]]:
    """(name, label) of every parameter of the runs: each template's order, then values its schema has lost."""
    named: dict[str, str] = {}
    for job in jobs:
        try:
            schema = job.template.schema()
        except ValueError:
            schema = []
        for param in schema:
            named.setdefault(param.name, param.label)
    for job in jobs:
        for name in job.params:
            named.setdefault(name, name)
    return list(named.items())


def legend_names(jobs: Sequence[Job], rows: Sequence[ParamRow]) -> list[str]:
    """Each run by what differs, in a few words; its short id where nothing does or two runs would read the same."""
    differing = [row for row in rows if row.differs][:LEGEND_PARAMS]
    names = [" · ".join(_part(row, index) for row in differing) or job.short_id for index, job in enumerate(jobs)]
    repeated = {name for name in names if names.count(name) > 1}
    return [
        f"{name} · {job.short_id}" if name in repeated and name != job.short_id else name
        for name, job in zip(names, jobs, strict=True)
    ]


def _part(row: ParamRow, index: int) -> str:
    """ "precision=fp32"; the template and the student by their names alone."""
    return row.values[index] if row.name in ("template", "student") else f"{row.name}={row.values[index]}"
