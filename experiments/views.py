"""The comparison page (/compare/?jobs=<id>,<id>&baseline=<id>) and its CSV files.

The page draws its charts from figures built on the server (figures.py) with Plotly, served from static/vendor and
loaded on this page only. While a run is still going, static/js/compare.js asks GET /api/v1/compare/ for the charts
and this page's ?part=tables for the tables every REFRESH_SECONDS.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode

from .comparison import compare_runs
from .exports import TABLES, csv_text
from .selection import MAX_RUNS, CompareRefused, NothingVisible, parse_ids

REFRESH_SECONDS = 30  # the collector stores a running job's points once a minute (telemetry/recorder.py)
NOTHING_VISIBLE = (
    "None of these runs can be shown: you may not see them or they were deleted. "
    "Pick runs from My jobs (or your course's jobs) and press Compare."
)


@login_required
def compare(request):
    picked = request.GET.getlist("jobs")
    if len(picked) > 1:  # a form of checkboxes: the permalink names the runs in one parameter
        query = {"jobs": ",".join(picked)}
        if "baseline" in request.GET:
            query["baseline"] = request.GET["baseline"]
        return redirect(f"{reverse('experiments:compare')}?{urlencode(query)}")
    try:
        comparison = compare_runs(request.user, parse_ids(picked), request.GET.get("baseline"))
    except CompareRefused as refused:
        return render(request, "experiments/compare.html", {"refusal": str(refused)}, status=400)
    except NothingVisible:
        return render(request, "experiments/compare.html", {"refusal": NOTHING_VISIBLE}, status=404)
    context = {"comparison": comparison, "refresh_seconds": REFRESH_SECONDS, "max_runs": MAX_RUNS}
    if request.GET.get("part") == "tables":
        return render(request, "experiments/_tables.html", context)
    return render(request, "experiments/compare.html", context)


@login_required
def compare_csv(request, table: str):
    if table not in TABLES:
        raise Http404("No such table.")
    try:
        comparison = compare_runs(request.user, parse_ids(request.GET.getlist("jobs")), request.GET.get("baseline"))
    except CompareRefused as refused:
        return HttpResponse(str(refused), status=400, content_type="text/plain; charset=utf-8")
    except NothingVisible:
        raise Http404(NOTHING_VISIBLE) from None
    response = HttpResponse(csv_text(comparison, table), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="comparison-{table}.csv"'
    return response
