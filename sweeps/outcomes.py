"""What a sweep's runs came to: each run's results (experiments/results.py, from the stored series), the best run by
the result the user picks, and the parallel-coordinates figure from the swept parameters to that result (Plotly JSON,
drawn by static/js/sweep.js)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from experiments.curves import stored_curves
from experiments.figures import colour
from experiments.results import Results, results_for
from experiments.selection import visible_runs
from jobs.models import Job

# result → (label, whether lower is better)
METRICS = {
    "final_loss": ("Final loss", True),
    "lowest_loss": ("Lowest loss", True),
    "median_tok_s": ("Median tok/s", False),
    "wall_seconds": ("Wall time (s)", True),
}
DEFAULT_METRIC = "final_loss"


@dataclass(frozen=True)
class RunOutcome:
    job: Job
    index: int
    results: Results

    def value(self, metric: str) -> float | None:
        return getattr(self.results, metric)


def outcomes(viewer, jobs: list[Job]) -> list[RunOutcome]:
    """Each run's results, read as the comparison reads them (the viewer's access checked per run)."""
    if not jobs:
        return []
    shown = visible_runs(viewer, [job.pk for job in jobs]).jobs
    index = {job.pk: job.task_index for job in jobs}  # type: ignore[attr-defined]  # set by progress.runs_of
    curves = stored_curves(shown)
    return [RunOutcome(job, index[job.pk], results_for(job, curves[str(job.pk)])) for job in shown]


def best(runs: list[RunOutcome], metric: str) -> RunOutcome | None:
    """The completed run with the best value of `metric`; None when no completed run has one."""
    lower_better = METRICS[metric][1]
    scored = [r for r in runs if r.value(metric) is not None and r.job.state == "completed"]
    if not scored:
        return None
    sign = 1.0 if lower_better else -1.0
    return min(scored, key=lambda r: sign * float(r.value(metric) or 0.0))


def parallel_coordinates(swept: dict[str, list[Any]], labels: dict[str, str], runs: list[RunOutcome], metric: str):
    """One line per run with a value: an axis per swept parameter (choices and bools as their positions) and one for
    the result, coloured by it. None when no run has the result yet."""
    scored = [r for r in runs if r.value(metric) is not None]
    if not scored:
        return None
    dimensions = []
    for name, values in swept.items():
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        column = [r.job.params.get(name) for r in scored]
        if numeric:
            dimensions.append({"label": labels.get(name, name), "values": column})
        else:
            texts = [str(v).lower() if isinstance(v, bool) else str(v) for v in values]
            positions = [values.index(v) if v in values else None for v in column]
            dimensions.append(
                {
                    "label": labels.get(name, name),
                    "values": positions,
                    "tickvals": list(range(len(values))),
                    "ticktext": texts,
                }
            )
    result = [r.value(metric) for r in scored]
    dimensions.append({"label": METRICS[metric][0], "values": result})
    trace = {
        "type": "parcoords",
        "line": {"color": result, "colorscale": "Viridis", "showscale": True, "reversescale": METRICS[metric][1]},
        "dimensions": dimensions,
    }
    layout = {
        "margin": {"l": 60, "r": 60, "t": 40, "b": 20},
        "font": {"size": 12},
        "height": 320,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "colorway": [colour(0)],
    }
    return {"data": [trace], "layout": layout}
