"""The JupyterLab session page: JupyterLab (proxied, sessions/notebook_proxy.py) beside the job's GPU charts and
hints, the time left before the allocation ends and a warning ten minutes before; who may open it is the access
helper's answer (jobs/access.get_job_notebook), so another student's session is a 404."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from clusters import kinds
from core.choices import EventKind, JobState
from jobs import access

from . import notebook


def _context(request, job_id) -> dict:
    job, as_staff = access.get_job_notebook(request.user, job_id)
    if not notebook.is_notebook(job):
        raise Http404("This job has no JupyterLab.")
    running = job.state == JobState.RUNNING
    if as_staff and running:
        notebook.note_staff_visit(job, request.user)
    visits = job.events.filter(kind=EventKind.NOTE, message__endswith="opened this job's JupyterLab.")
    return {
        "job": job,
        "as_staff": as_staff,
        "running": running,
        "clock": notebook.clock(job),
        "lab_url": notebook.prefix(job.pk) + "lab",
        "staff_visits": list(visits.exclude(actor=job.owner).order_by("-at")[:3]),
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
