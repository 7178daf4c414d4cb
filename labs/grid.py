"""The instructor's view of a lab: a row per student (who is behind first), the flags for the stuck, and the class's
pace against the plan. Read from labs/progress.py, the same answer the students' pages show."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from statistics import median

from django.core.exceptions import ObjectDoesNotExist
from django.utils import timezone

from core.choices import JobState

from .models import Lab, Section
from .progress import State, StepProgress, class_progress
from .specs import FAILED_STATES

WAITING_STATES = frozenset({JobState.QUEUED, JobState.SUBMITTING, JobState.PENDING})


@dataclass
class Row:
    student: object
    cells: list[StepProgress]
    done: int = 0
    flags: list[str] = field(default_factory=list)
    last_done_at: datetime | None = None


def flags_of(cell: StepProgress, lab: Lab, now: datetime) -> list[str]:
    if cell.state == State.DONE:
        return []
    flags = []
    if sum(1 for job in cell.jobs if job.state in FAILED_STATES) >= 2:
        flags.append("failed twice")
    latest = cell.latest
    waited = now - latest.created_at if latest is not None and latest.state in WAITING_STATES else None
    if waited is not None and waited > timedelta(minutes=lab.stuck_after_minutes):
        flags.append(f"waiting > {lab.stuck_after_minutes} min")
    if latest is not None and latest.state == JobState.RUNNING:
        try:
            if latest.idle_warning.warned_at is not None:
                flags.append("idle GPU")
        except ObjectDoesNotExist:
            pass
    return flags


def row_for(lab: Lab, student, cells: list[StepProgress], now: datetime) -> Row:
    row = Row(student=student, cells=cells)
    for cell in cells:
        cell.flags = flags_of(cell, lab, now)
        row.flags.extend(f"{cell.step.title}: {flag}" for flag in cell.flags)
    done = [c.done_at for c in cells if c.state == State.DONE and c.done_at]
    row.done, row.last_done_at = len(done), max(done) if done else None
    return row


def rows(lab: Lab, students) -> list[Row]:
    """Every student's row, the furthest behind first (fewest steps done, then the flagged)."""
    now = timezone.now()
    people = list(students)
    progress = class_progress(lab, people)
    built = [row_for(lab, person, progress[person.pk], now) for person in people]
    return sorted(built, key=lambda r: (r.done, not r.flags, getattr(r.student, "username", "")))


def started_at(lab: Lab, built: list[Row]) -> datetime | None:
    """When the lab began: its lab session's start, else the first run any student made for it."""
    if lab.lab_session_id is not None:
        return lab.lab_session.starts_at  # type: ignore[union-attr]
    firsts = [min(j.created_at for j in c.jobs) for r in built for c in r.cells if c.jobs]
    return min(firsts) if firsts else None


@dataclass
class Pace:
    section: Section
    planned_end: datetime
    finished: int
    behind_minutes: float | None  # the median student's lateness (negative: ahead); None before it is due


def pace(lab: Lab, built: list[Row]) -> list[Pace]:
    """Per section: when the plan says it ends, how many students have finished it, and how late the median
    student is (those not finished yet count as finishing now)."""
    start, now = started_at(lab, built), timezone.now()
    if start is None or not built:
        return []
    out, end = [], start
    for section in lab.sections.all():
        end = end + timedelta(minutes=section.planned_minutes)
        finish_times = []
        for row in built:
            cells = [c for c in row.cells if c.step.section_id == section.pk and c.state != State.NONE]
            done = [c.done_at for c in cells if c.state == State.DONE and c.done_at]
            finish_times.append(max(done) if cells and len(done) == len(cells) else (now if cells else None))
        times = [t for t in finish_times if t is not None]
        finished = sum(1 for t in times if t is not now)
        late = median((t - end).total_seconds() / 60 for t in times) if times and (now > end or finished) else None
        out.append(Pace(section=section, planned_end=end, finished=finished, behind_minutes=late))
    return out
