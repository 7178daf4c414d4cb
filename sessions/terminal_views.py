"""The job terminal's page: xterm.js wired to sessions/terminal.py's socket. Who may open it is the access helper's
answer (jobs/access.get_job_terminal): another student's job is a 404, as everywhere."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from clusters import kinds
from core.choices import JobState
from jobs import access


@login_required
def job_terminal(request, job_id):
    job, as_staff = access.get_job_terminal(request.user, job_id)
    kind = kinds.kind_of(job.cluster.kind)
    context = {
        "job": job,
        "as_staff": as_staff,
        "supported": kind.opens_terminals,
        "running": job.state == JobState.RUNNING,
    }
    return render(request, "sessions/terminal.html", context)
