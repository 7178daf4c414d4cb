"""A comparison of runs: what the page, its CSV files and GET /api/v1/compare/ show, built once.

`compare_runs(viewer, job_ids)` is the whole of it: the runs the viewer may see (selection.py), their parameters
(parameters.py), results and speed-ups (results.py), charts (figures.py) and servers' load tests (load_tests.py). A
sweep's page calls it with its runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from jobs.models import Job

from .curves import RunCurves, stored_curves
from .figures import colour, figures
from .load_tests import LoadTest, load_test_of
from .parameters import ParamRow, legend_names, parameter_rows
from .results import Results, add_speedups, results_for
from .selection import visible_runs

__all__ = ["Comparison", "Run", "compare_runs"]


@dataclass
class Run:
    job: Job
    name: str  # its legend entry: what differs
    colour: str
    results: Results
    curves: RunCurves
    load_test: LoadTest | None = None  # a server's last kept load test


@dataclass
class Comparison:
    runs: list[Run]
    parameters: list[ParamRow]
    baseline: Run
    figures: dict[str, dict]
    note: str  # runs left out, in words; "" when every named run is shown

    @property
    def differing(self) -> list[ParamRow]:
        return [row for row in self.parameters if row.differs]

    @property
    def load_tested(self) -> list[Run]:
        """The runs with a kept load test: the load-test table's rows (none: no table)."""
        return [run for run in self.runs if run.load_test is not None]

    @property
    def simulated(self) -> bool:
        """Whether a run's GPU figures came from the demo's stand-in nvidia-smi (its summary says so)."""
        return any(run.results.simulated_gpus for run in self.runs)

    @property
    def live(self) -> bool:
        """Whether a run may still add points: the page then asks again now and then."""
        return any(run.job.is_active for run in self.runs)

    @property
    def ids(self) -> str:
        return ",".join(str(run.job.pk) for run in self.runs)


def compare_runs(viewer, job_ids: Sequence[UUID | str], baseline: str | None = None) -> Comparison:
    """The comparison of the runs the viewer may see among job_ids; baseline: a run's id (default the first shown).
    Raises selection.NothingVisible when the viewer may see none of them."""
    selection = visible_runs(viewer, job_ids)
    jobs = selection.jobs
    rows = parameter_rows(jobs)
    names = legend_names(jobs, rows)
    curves = stored_curves(jobs)
    runs = [
        Run(job, name, colour(i), results_for(job, curves[str(job.pk)]), curves[str(job.pk)], load_test_of(job))
        for i, (job, name) in enumerate(zip(jobs, names, strict=True))
    ]
    base = next((i for i, run in enumerate(runs) if str(run.job.pk) == str(baseline)), 0)
    add_speedups([run.results for run in runs], [run.job.gpus for run in runs], base)
    return Comparison(
        runs=runs,
        parameters=rows,
        baseline=runs[base],
        figures=figures(names, [run.curves for run in runs], [run.results.simulated_gpus for run in runs]),
        note=selection.note,
    )
