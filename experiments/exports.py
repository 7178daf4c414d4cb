"""A comparison as CSV: its parameter table, its results table, its aligned series (every stored point, not the
charts' downsampled ones) and its servers' load tests, through the portal's formula-safe writer (core/csv_cells.py)."""

from __future__ import annotations

import io

from core import csv_cells

from .comparison import Comparison
from .curves import CHARTS, STEP_CHARTS
from .load_tests import FIGURES

TABLES = ("parameters", "results", "series", "load-tests")
RESULT_COLUMNS = [
    "job",
    "run",
    "template",
    "student",
    "state",
    "exit_code",
    "gpus",
    "final_loss",
    "lowest_loss",
    "median_tok_s",
    "tok_s_per_gpu",
    "speedup_vs_baseline",
    "scaling_efficiency_pct",
    "wall_seconds",
    "gpu_hours",
    "mean_gpu_util_pct",
    "peak_gpu_memory_mib",
    "gpu_figures",  # measured, or simulated (the demo's stand-in nvidia-smi)
    "right_size",
    "baseline",
]


def csv_text(comparison: Comparison, table: str) -> str:
    out = io.StringIO()
    writer = csv_cells.writer(out)
    tables = {"parameters": _parameters, "results": _results, "series": _series, "load-tests": _load_tests}
    writer.writerows(tables[table](comparison))
    return out.getvalue()


def _parameters(comparison: Comparison) -> list[list]:
    header = ["parameter", "label", "differs", *(f"{run.name} ({run.job.pk})" for run in comparison.runs)]
    rows = [[row.name, row.label, "yes" if row.differs else "no", *row.values] for row in comparison.parameters]
    return [header, *rows]


def _blank(value):
    return "" if value is None else value


def _results(comparison: Comparison) -> list[list]:
    rows: list[list] = [RESULT_COLUMNS]
    for run in comparison.runs:
        job, r = run.job, run.results
        rows.append(
            [
                str(job.pk),
                run.name,
                job.template.name,
                job.owner.username,
                job.state,
                _blank(job.exit_code),
                job.gpus,
                *map(_blank, (r.final_loss, r.lowest_loss, r.median_tok_s, r.tok_s_per_gpu)),
                _blank(r.speedup),
                _blank(r.scaling_efficiency),
                _blank(r.wall_seconds),
                r.gpu_hours,
                _blank(r.mean_gpu_util),
                _blank(r.peak_gpu_memory_mib),
                "simulated" if r.simulated_gpus else "measured",
                r.verdict,
                "yes" if run is comparison.baseline else "",
            ]
        )
    return rows


def _series(comparison: Comparison) -> list[list]:
    rows: list[list] = [["job", "run", "chart", "x_unit", "x", "y"]]
    for run in comparison.runs:
        for chart in CHARTS:
            curve = run.curves.curves.get(chart)
            unit = "step" if chart in STEP_CHARTS else "seconds_since_start"
            for x, y in zip(curve.x, curve.y, strict=True) if curve else ():
                rows.append([str(run.job.pk), run.name, chart, unit, x, _blank(y)])
    return rows


LOAD_TEST_COLUMNS = ["job", "run", "load_test", "read_at", *FIGURES, "prompts", "concurrency", "failed"]


def _load_tests(comparison: Comparison) -> list[list]:
    """A row per run with a kept load test; only the header where none has one."""
    rows: list[list] = [LOAD_TEST_COLUMNS]
    for run in comparison.load_tested:
        t = run.load_test
        assert t is not None
        numbers = [getattr(t, name) for name in (*FIGURES, "prompts", "concurrency", "failed")]
        rows.append([str(run.job.pk), run.name, t.name, t.read_at.isoformat(), *map(_blank, numbers)])
    return rows
