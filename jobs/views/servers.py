"""Job-page actions for servers: Scale, Try it (streamed), Load test and its report (jobs/servers.py)."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from clusters.backends import BackendError
from jobs import access, servers
from jobs.forms import LoadTestForm


def _int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


@login_required
@require_POST
def scale(request, job_id):
    job = access.get_job(request.user, job_id, act=True)
    try:
        messages.success(request, servers.scale(request.user, job, _int(request.POST.get("replicas"), -1)))
    except (servers.ActionRefused, BackendError) as exc:
        messages.error(request, f"Not scaled: {exc}")
    return redirect(job)


@login_required
@require_POST
def try_it(request, job_id):
    """Stream the server's answer as plain text; the page appends it as it arrives."""
    job = access.get_job(request.user, job_id, act=True)
    try:
        pieces = servers.try_it(request.user, job, request.POST.get("prompt", ""))
        first = next(pieces, "")
    except (servers.ActionRefused, BackendError) as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")

    def answer():
        yield first
        try:
            yield from pieces
        except BackendError as exc:
            yield f"\n[the server stopped answering: {exc}]"

    response = StreamingHttpResponse(answer(), content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    response["X-Accel-Buffering"] = "no"  # let a fronting nginx pass tokens through as they come
    return response


@login_required
@require_POST
def load_test(request, job_id):
    job = access.get_job(request.user, job_id, act=True)
    form = LoadTestForm(request.POST)
    asked = {name: request.POST.get(name, "")[:12] for name in form.fields}  # what the form shows again
    refused = servers.refusal(request.user, job)  # first: no value changes that answer
    try:
        if refused or not form.is_valid():
            raise servers.ActionRefused(refused or form.problems())
        name = servers.start_load_test(request.user, job, **form.values())
    except servers.ActionRefused as exc:
        messages.error(request, f"No load test started: {exc}")
        return redirect(f"{job.get_absolute_url()}?{urlencode(asked)}#load-test")
    messages.success(request, f"Load test {name} started; its report appears below when it finishes.")
    # The card waits for this test by name: its pod may not exist yet when the page asks.
    return redirect(f"{job.get_absolute_url()}?{urlencode({'load_test': name, **asked})}#load-test")


@login_required
def load_test_report(request, job_id):
    job = access.get_job(request.user, job_id)
    error = ""
    try:
        report = servers.load_test_report(job)
    except BackendError as exc:
        report, error = None, str(exc)
    # A test just started (or the in-job generator of a job not yet running) has no pod to read for a while: the card
    # asks again until one of that name shows, as long as the job can still make one.
    expect = request.GET.get("expect", "")[:120]
    found = report is not None and (report.name == expect or report.name.startswith(f"{expect}-"))  # or its pod's
    awaited = expect if expect and job.is_active and not found else ""
    context = {"job": job, "report": report, "error": error, "awaited": awaited}
    return render(request, "jobs/_load_test.html", context)
