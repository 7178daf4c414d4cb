"""The sweep's page (progress, its runs, the comparison of the best of them, the parallel-coordinates chart, the best
run by a metric the user picks and "Launch again with the best values") and cancel-all."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from experiments.comparison import compare_runs
from experiments.selection import MAX_RUNS, NothingVisible
from experiments.views import REFRESH_SECONDS

from . import access
from .cancellation import CancelRefused, request_cancel
from .outcomes import DEFAULT_METRIC, METRICS, best, outcomes, parallel_coordinates
from .progress import progress, runs_of


@login_required
def detail(request, sweep_id):
    sweep = access.get_sweep(request.user, sweep_id)
    jobs = runs_of(sweep)
    metric = request.GET.get("metric") if request.GET.get("metric") in METRICS else DEFAULT_METRIC
    runs = outcomes(request.user, jobs)
    top = best(runs, metric)
    labels = {p.name: p.label for p in sweep.template.schema()}
    context = {
        "sweep": sweep,
        "jobs": jobs,
        "swept_labels": [labels.get(name, name) for name in sweep.swept],
        "progress": progress(jobs),
        "metric": metric,
        "metrics": [(key, label) for key, (label, _) in METRICS.items()],
        "best": top,
        "parcoords": parallel_coordinates(sweep.swept, labels, runs, metric),
        "comparison": _comparison(request.user, runs, metric),
        "refresh_seconds": REFRESH_SECONDS,
        "can_cancel": sweep.cancel_requested_at is None and any(job.is_active for job in jobs),
    }
    return render(request, "sweeps/detail.html", context)


def _comparison(viewer, runs, metric: str):
    """The comparison of up to MAX_RUNS runs, the best by the metric first (runs without it last)."""
    lower_better = METRICS[metric][1]
    ranked = sorted(
        runs,
        key=lambda r: (r.value(metric) is None, (r.value(metric) or 0) * (1 if lower_better else -1), r.index),
    )
    picked = [r.job.pk for r in ranked[:MAX_RUNS]]
    if len(picked) < 2:
        return None
    try:
        return compare_runs(viewer, picked)
    except NothingVisible:
        return None


@login_required
@require_POST
def cancel(request, sweep_id):
    sweep = access.get_sweep(request.user, sweep_id)
    try:
        messages.success(request, request_cancel(request.user, sweep))
    except CancelRefused as exc:
        messages.info(request, str(exc))
    return redirect(sweep)
