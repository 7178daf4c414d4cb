"""The job terminal's page: xterm.js wired to sessions/terminal.py's socket. Who may open it is the access helper's
answer (jobs/access.get_job_terminal): another student's job is a 404, as everywhere."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from clusters import kinds
from clusters.errors import BackendError
from core.choices import JobState
from jobs import access


@login_required
def job_terminal(request, job_id):
    job, as_staff = access.get_job_terminal(request.user, job_id)
    kind = kinds.kind_of(job.cluster.kind)
    running = job.state == JobState.RUNNING
    context = {
        "job": job,
        "as_staff": as_staff,
        "supported": kind.opens_terminals,
        "running": running,
        "note": kind.terminal_note,
        **(_targets(kind, job, request.GET.get("target", "")) if kind.opens_terminals and running else {}),
    }
    return render(request, "sessions/terminal.html", context)


def _targets(kind, job, wanted: str) -> dict:
    """The places a shell can open in the job (a pod's containers) and the one picked; the socket checks it again."""
    try:
        targets = kind.terminal_targets(job)
    except BackendError as exc:
        return {"targets": [], "target": "", "targets_error": str(exc)}
    return {"targets": targets, "target": wanted if wanted in targets else (targets[0] if targets else "")}
