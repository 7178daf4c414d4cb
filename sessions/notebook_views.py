"""The JupyterLab session page: JupyterLab (proxied, sessions/notebook_proxy.py) beside the job's GPU charts and
hints, the time left before the allocation ends and a warning ten minutes before; who may open it is the access
helper's answer: whoever may see the job sees this page (another student: 404), and only its owner gets JupyterLab
itself (jobs/access.get_job_notebook)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import render

from clusters import kinds
from core.choices import JobState
from jobs import access

from . import notebook, notebook_ready


def _context(request, job_id) -> dict:
    job = access.get_job(request.user, job_id)
    if not notebook.is_notebook(job):
        raise Http404("This job has no JupyterLab.")
    return {
        "job": job,
        "may_open": job.owner_id == request.user.pk,  # access.get_job_notebook: the owner alone
        "running": job.state == JobState.RUNNING,
        "clock": notebook.clock(job),
        "lab_url": notebook.prefix(job.pk) + "lab",
        "idle_minutes": job.course.session_idle_minutes,
        "kept_note": kinds.kind_of(job.cluster.kind).notebook_note,
    }


@login_required
def job_notebook(request, job_id):
    return render(request, "sessions/notebook.html", _context(request, job_id))


@login_required
def job_notebook_status(request, job_id):
    """The session's state and clock, refreshed by htmx while the page is open."""
    return render(request, "sessions/_notebook_status.html", _context(request, job_id))


@login_required
def job_notebook_ready(request, job_id):
    """Whether the owner's JupyterLab answers yet, and what to say until it does (sessions/notebook_ready.py)."""
    job = access.get_job_notebook(request.user, job_id)
    if not notebook.is_notebook(job):
        raise Http404("This job has no JupyterLab.")
    return JsonResponse(notebook_ready.readiness(job).as_dict(), headers={"Cache-Control": "no-store"})
