from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from clusters import kinds
from clusters.backends import BackendError
from clusters.backends.kind import dashboard_path
from core.choices import EventKind, JobState
from jobs import access, job_page, queue_steps, rightsize, run_columns, servers, status_panel, waiting
from jobs.cancellation import CancelRefused, request_cancel
from jobs.filters import JobFilterForm
from jobs.forms import LoadTestForm
from jobs.logs import log_streams, read_log
from jobs.models import IdleWarning, Job, JobTemplate
from jobs.progress import job_progress
from jobs.states import record
from jobs.trainer_curve import recent_curve_points, stored_curve_points


@login_required
def my_jobs(request):
    """The student's own jobs, filtered by state, template and text; htmx refreshes the rows every 5 s."""
    form = JobFilterForm(request.GET or None)
    jobs = form.apply(Job.objects.filter(owner=request.user)).for_table()
    page = Paginator(jobs, 50).get_page(request.GET.get("page"))
    rows = list(page.object_list)
    context = {"form": form, "page": page, "jobs": rows, "show_owner": False, **run_columns.annotate(rows)}
    if request.headers.get("HX-Request"):
        return render(request, "jobs/_job_rows.html", context)
    context["templates"] = JobTemplate.objects.filter(jobs__owner=request.user).distinct().only("slug", "name")
    return render(request, "jobs/my_jobs.html", context)


@login_required
def detail(request, job_id):
    job = access.get_job(request.user, job_id)
    context = {
        **_status_context(job, request.user),
        "parameters": _labelled_params(job),
        "rightsize": rightsize.report_for(job),
    }
    context["panel"] = status_panel.render_panel(context)
    kind = kinds.kind_of(job.cluster.kind)
    warning = IdleWarning.objects.filter(job=job).first() if job.state == JobState.RUNNING else None
    context["idle_warning"] = warning if warning is not None and warning.active else None
    context["may_act"] = access.may_act(request.user, job)
    context["compare_with"] = _other_runs(request.user, job)
    server = kind.server(job)
    if server is not None:  # what the kind lets a student do with a running server, and its separate logs
        context["server"] = server
        context["server_refusal"] = servers.refusal(request.user, job)
        context["in_job_report"] = servers.IN_JOB_REPORT
        context["load_test_form"] = LoadTestForm.remembered(request.GET)
        context["stream"] = request.GET.get("stream", "")
        if job.scheduler_id and not job.is_terminal:
            try:
                context["streams"] = log_streams(job)
            except BackendError as exc:
                context["streams_error"] = str(exc)
    return render(request, "jobs/detail.html", context)


COMPARE_CHOICES = 20  # the newest runs offered under "Compare with…"


def _other_runs(user, job) -> list[tuple[Job, str]]:
    """ "Compare with…": the viewer's other runs of this template (and, for a course's staff, the student's own), each
    with what differs from this one ("precision=fp32, batch_size=64"), newest first."""
    runs = (
        access.visible_jobs(user)
        .filter(template_id=job.template_id, owner_id__in={user.pk, job.owner_id}, started_at__isnull=False)
        .exclude(pk=job.pk)
        .only("id", "params", "created_at")
        .order_by("-created_at")[:COMPARE_CHOICES]
    )
    differs = [
        (run, ", ".join(f"{k}={v}" for k, v in run.params.items() if job.params.get(k) != v) or "the same values")
        for run in runs
    ]
    return differs


def _status_context(job, viewer=None) -> dict:
    """What the state panel shows: the job, its events, how far it got, and what a cancel would stop; for `viewer`,
    the job's dashboard (a RayJob's Ray dashboard) while it runs, which its owner alone opens."""
    events = list(job.events.select_related("actor"))
    points = (recent_curve_points(job.pk) or stored_curve_points(job)) if job.started_at else []
    now = timezone.now()
    progress = job_progress(job, points, now)
    return {
        "job": job,
        "wait": waiting.panel_for(job, now),
        "events": events,
        "queue_counts": queue_steps.counts(job) if job.submitted_at else {},
        "progress": progress,
        "cancel_question": job_page.cancel_question(job, progress) if job.can_cancel else "",
        "cancel_note": job_page.cancel_note(job, events)
        if job.cancel_requested_at or job.state == "cancelled"
        else None,
        "ended_before_cancel": job_page.ended_before_cancel(job),
        "exit_note": job_page.exit_note(job),
        # In the refreshed panel, so the button appears when the job starts and goes when it ends (no reload).
        "opens_terminal": job.state == JobState.RUNNING and kinds.kind_of(job.cluster.kind).opens_terminals,
        "dashboard": _dashboard(job, viewer),
    }


def _dashboard(job, viewer) -> dict | None:
    """The job's dashboard on its page while it runs: its name, and its path for the owner (others are told whose)."""
    name = kinds.kind_of(job.cluster.kind).dashboard_name(job) if job.state == JobState.RUNNING else ""
    if not name:
        return None
    own = viewer is not None and viewer.pk == job.owner_id
    return {"name": name, "url": dashboard_path(job.pk) if own else ""}


def _labelled_params(job) -> list[tuple[str, object]]:
    """The job's values in the template's order, under their labels; values the schema lost stay visible."""
    try:
        labels = {p.name: p.label for p in job.template.schema()}
    except ValueError:
        labels = {}
    ordered = [(labels[name], job.params[name]) for name in labels if name in job.params]
    return ordered + [(name, value) for name, value in job.params.items() if name not in labels]


@login_required
def status(request, job_id):
    """The parts of the job's state panel that changed since the versions in ?seen= (jobs/status_panel.py), for
    the page's poller while the job is not finished; 204 when nothing did."""
    job = access.get_job(request.user, job_id)
    panel = status_panel.render_panel(_status_context(job, request.user))
    changed = panel.changed_since(request.GET.get("seen", ""))
    if not changed:
        return HttpResponse(status=204)
    return render(request, "jobs/_status_update.html", {"job": job, "panel": panel, "changed": changed})


@login_required
def log(request, job_id):
    """The next piece of the log from ?offset=N; htmx appends it and asks again from the new offset."""
    job = access.get_job(request.user, job_id)
    try:
        offset = max(0, int(request.GET.get("offset", 0)))
    except ValueError:
        offset = 0
    error, stream = "", request.GET.get("stream", "")
    try:
        chunk = read_log(job, offset, stream)
    except BackendError as exc:
        chunk, error = None, str(exc)
    context = {
        "job": job,
        "chunk": chunk,
        "offset": chunk.offset if chunk else offset,
        "error": error,
        "stream": stream,
    }
    context["done"] = job.is_terminal and chunk is not None and chunk.eof
    # What the poller shows under the log; when it would say the same and no text came, htmx has nothing to swap.
    context["said"] = "waiting" if chunk is not None and not chunk.exists else ""
    if chunk is not None and not chunk.data and not context["done"] and request.GET.get("said") == context["said"]:
        return HttpResponse(status=204)
    return render(request, "jobs/_log.html", context)


@login_required
@require_http_methods(["POST"])
def keep(request, job_id):
    """ "Keep it" on an idle warning: the course's idle clock starts again for this job."""
    job = access.get_job(request.user, job_id, act=True)
    if job.state == JobState.RUNNING and job.cancel_requested_at is None:
        IdleWarning.objects.update_or_create(job=job, defaults={"kept_at": timezone.now(), "kept_by": request.user})
        record(job, EventKind.NOTE, "Kept: the idle clock starts again now.", actor=request.user)
        messages.success(request, "Kept: the idle clock starts again now. Use the GPUs, or cancel when you are done.")
    return redirect(job)


@login_required
@require_http_methods(["GET", "POST"])
def cancel(request, job_id):
    """GET: the confirmation page (the job page asks in a dialog; this is its form without JavaScript). POST: stop."""
    job = access.get_job(request.user, job_id)
    if request.method == "GET":
        if not job.can_cancel:
            return redirect(job)
        return render(request, "jobs/cancel_confirm.html", _status_context(job))
    try:
        said = request_cancel(request.user, job)
    except CancelRefused as exc:
        messages.warning(request, str(exc))
        said = ""
    back = request.POST.get("next", "")  # a job table's Cancel returns to the table, which shows no panel
    if url_has_allowed_host_and_scheme(back, {request.get_host()}, require_https=request.is_secure()):
        if said:
            messages.info(request, said)
        return redirect(back)
    job.refresh_from_db()
    if said and job.is_terminal:  # cancelled before submission; a cancel under way is shown by the state panel
        messages.info(request, said)
    return redirect(job)
