"""What tells a job table's runs apart: the parameters that differ between runs of the same template, and each
run's results (final loss, tok/s), as columns.

Five rows of "Tiny LM — single GPU" look the same by name; their batch sizes and learning rates do not. For the
jobs of one page, per template, a parameter whose value is not the same in all of that template's runs becomes a
column under its label (a parameter of several templates shares one column). Results come from the job's summary
(stored by the collector when it ended, joined in the table's one query) or, for a job still running, from the
trainer's newest point (one Redis round trip for the page).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from core.choices import JobState

from .models import Job
from .trainer_curve import latest_curve_points


@dataclass(frozen=True)
class Column:
    name: str
    label: str


def varying_columns(jobs: list[Job]) -> list[Column]:
    """The parameters whose values differ between the page's runs of one template, in the templates' order."""
    by_template: dict[int, list[Job]] = {}
    for job in jobs:
        by_template.setdefault(job.template_id, []).append(job)
    columns: dict[str, Column] = {}
    for runs in by_template.values():
        if len(runs) < 2:
            continue
        for name, label in _labels(runs[0]):
            seen = {json.dumps(run.params.get(name), sort_keys=True) for run in runs}
            if len(seen) > 1 and name not in columns:
                columns[name] = Column(name, label)
    return list(columns.values())


def _labels(job: Job) -> list[tuple[str, str]]:
    try:
        schema = job.template.schema()
    except ValueError:
        schema = []
    named = [(p.name, p.label) for p in schema]
    known = {name for name, _ in named}
    return named + [(name, name) for name in job.params if name not in known]


def annotate(jobs: list[Job]) -> dict:
    """Sets job.varied (the values under the columns) and job.loss / job.tok_s on each job; returns the table's
    context: its columns, and whether any run has a result to show."""
    columns = varying_columns(jobs)
    running = [job.pk for job in jobs if job.state == JobState.RUNNING and getattr(job, "summary", None) is None]
    latest = latest_curve_points(running)
    results = False
    for job in jobs:
        job.varied = [(c, _shown(job.params.get(c.name))) for c in columns]  # type: ignore[attr-defined]
        summary = getattr(job, "summary", None)
        point = latest.get(str(job.pk), {})
        job.loss = summary.final_loss if summary is not None else point.get("loss")  # type: ignore[attr-defined]
        job.tok_s = summary.mean_tokens_per_s if summary is not None else point.get("tok_s")  # type: ignore[attr-defined]
        results = results or job.loss is not None or job.tok_s is not None  # type: ignore[attr-defined]
    return {"varying": columns, "show_results": results}


def _shown(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
