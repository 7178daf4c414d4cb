"""Does a job's log hold a piece of text? Read with the job page's own reader (jobs/logs.py: the cluster's log, or the
copy the portal kept once the scratch is cleaned), bounded, and remembered (LogMatch) so a log is read at most until
the text is found, or once after the job ended."""

from __future__ import annotations

from typing import Any

from clusters.backends.base import BackendError
from core.choices import JobState
from jobs.logs import read_log
from jobs.models import Job

from .models import LogMatch, Step

SCAN_BYTES = 4 * 1024 * 1024  # a lab's runs print a few pages; a runaway log is not read to its end


def log_holds(job: Job, pattern: str) -> bool | None:
    """True when the log holds `pattern`, False when it does not (yet), None when it cannot be read now."""
    if not job.scheduler_id:
        return False
    offset, tail = 0, ""
    try:
        while offset < SCAN_BYTES:
            chunk = read_log(job, offset)
            if pattern in tail + chunk.data:
                return True
            tail = (tail + chunk.data)[-len(pattern) :]  # a line cut between two chunks is still found
            if chunk.eof or chunk.offset <= offset or not chunk.exists:
                return False
            offset = chunk.offset
    except BackendError:
        return None
    return False


def matched(step: Step, job: Job, pattern: str, known: dict[tuple[int, Any], LogMatch], *, running: bool) -> bool:
    """Whether `job`'s log holds the step's pattern; `known` holds the LogMatch rows already loaded. An ended run's
    log is read once and what it held remembered; a running one's is read only with running=True (the student's own
    page and a move of their run, never the class grid's sixty at once)."""
    row = known.get((step.pk, job.pk))
    if row is not None:
        return row.found
    if not (job.is_terminal or (running and job.state == JobState.RUNNING)):
        return False
    holds = log_holds(job, pattern)
    if holds or (holds is False and job.is_terminal):
        row, _ = LogMatch.objects.get_or_create(step=step, job=job, defaults={"found": bool(holds)})
        known[(step.pk, job.pk)] = row
        return row.found
    return False
