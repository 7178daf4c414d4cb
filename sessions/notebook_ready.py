"""What the session page says while a JupyterLab session comes up, and when its frame may load.

The page asks every few seconds (static/js/notebook.js); each answer is one phase: `waiting` (the job waits for a
node), `starting` (the job runs, its server does not answer yet), `ready` (it answers: the page loads JupyterLab),
`unreachable` (the portal cannot reach the cluster now; the page keeps asking), `refused` (the server's address is
one the portal will not open, or the cluster cannot tell it; asking again will not help) or `ended`. Only the owner
asks (jobs/access.get_job_notebook), the same check as every proxied request.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime

from django.utils import timezone

from clusters.backends.base import BackendError, NotSupported
from clusters.backends.kind import ActionRefused, NotebookNotReady
from core.choices import JobState
from jobs.models import Job

from . import notebook

WAITING = frozenset({JobState.QUEUED, JobState.SUBMITTING, JobState.PENDING})
READY = "JupyterLab is ready: open it in a new tab with the button above."  # shown where the frame is not (a phone)


@dataclass(frozen=True)
class Readiness:
    phase: str
    message: str
    elapsed_s: int = 0  # since the phase began (launch, or the job's start), for the page's running clock
    lab_url: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def _since(moment: datetime | None) -> int:
    return max(0, int((timezone.now() - moment).total_seconds())) if moment else 0


def readiness(job: Job) -> Readiness:
    if job.is_terminal:
        return Readiness("ended", f"This session has ended ({job.get_state_display().lower()}).")
    if job.state in WAITING:
        if job.state != JobState.PENDING:
            return Readiness("waiting", "Sending the session to the cluster…", _since(job.created_at))
        why = f" (SLURM says: {job.scheduler_reason})" if job.scheduler_reason else ""
        return Readiness("waiting", f"Waiting for a GPU node…{why}", _since(job.created_at))
    started = _since(job.started_at)
    try:
        if notebook.answers(job):
            return Readiness("ready", READY, started, notebook.prefix(job.pk) + "lab")
    except NotebookNotReady:
        pass
    except (ActionRefused, NotSupported) as exc:  # asking again will not change the answer
        return Readiness("refused", str(exc), started)
    except BackendError as exc:
        return Readiness("unreachable", f"Starting JupyterLab… The portal cannot ask the cluster now: {exc}", started)
    return Readiness("starting", "Starting JupyterLab on the node…", started)
