"""What the job page says about stopping a job: the question before a cancel, and afterwards who stopped it, when,
and what its exit code means.

Everything comes from the job row, its JobEvents (already loaded for the timeline) and its progress, so the
status panel that refreshes every few seconds costs no extra query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from core.choices import EventKind, JobState

from .models import Job, JobEvent
from .progress import Progress
from .templatetags.job_time import duration

SIGNAL_EXITS = {143: "SIGTERM", 137: "SIGKILL", 130: "SIGINT"}  # 128 + the signal, as SLURM and shells report it


@dataclass(frozen=True)
class CancelNote:
    """Who asked for the stop and when; `actor` is empty when the portal itself stopped the job (a time limit)."""

    actor: str
    at: datetime
    message: str


def cancel_question(job: Job, progress: Progress) -> str:
    """The confirmation, saying what stops: "Stop training? It has run 12 min and reached step 300 of 1000 …"."""
    if job.started_at is None:
        return "Cancel this job? It has not started yet; it leaves the queue and nothing runs."
    ran = f"It has run {duration(progress.elapsed)}"
    if progress.step is not None:
        of = f" of {progress.max_steps}" if progress.max_steps else ""
        return (
            f"Stop training? {ran} and reached step {progress.step}{of}. The bundled trainer saves a checkpoint "
            "at the step it stops at; the steps after it are not run."
        )
    return f"Stop this job? {ran}; what it is doing stops, and its log so far is kept."


def cancel_note(job: Job, events: Sequence[JobEvent]) -> CancelNote | None:
    """The cancel request behind a cancelled job, or behind a cancel the job outran; None if nobody asked."""
    asked = (e for e in events if e.kind == EventKind.CANCEL)
    moved = (e for e in events if e.to_state == JobState.CANCELLED and e.actor_id)  # cancelled before submission
    event = next(asked, None) or next(moved, None)
    if event is None:
        return None
    return CancelNote(actor=event.actor.username if event.actor else "", at=event.at, message=event.message)


def ended_before_cancel(job: Job) -> bool:
    """A cancel was asked for, but the job had ended on its own before the scheduler stopped it."""
    return job.is_terminal and job.cancel_requested_at is not None and job.state != JobState.CANCELLED


def exit_note(job: Job) -> str:
    """Words for an exit code that is not a crash (the signal a cancel or a time limit sends, a script that stopped
    cleanly when asked to), or for an ended job without one."""
    if job.exit_code is None:
        if not job.is_terminal:
            return ""
        return "it never ran" if job.started_at is None else "the cluster reported no exit code for it"
    signal = SIGNAL_EXITS.get(job.exit_code)
    if signal and job.state == JobState.CANCELLED:
        return f"{signal}: the cancel stopped it, as expected"
    if signal and job.state == JobState.TIMED_OUT:
        return f"{signal}: the time limit stopped it"
    if job.exit_code == 0 and job.state in (JobState.CANCELLED, JobState.TIMED_OUT):
        stop = "the cancel" if job.state == JobState.CANCELLED else "the time limit"
        return f"the script itself exited 0: it stopped cleanly when {stop} signalled it, as the bundled trainer does"
    return ""
