"""The per-minute budget pass: students told at 80 % and 95 % of their GPU-hour budget, a used-up budget recorded
(BudgetOverrun), and once the course's grace has passed, the running jobs it covers stopped through the normal
cancellation path with an event that says why.

Invariant: the pass reads with a fixed number of queries whatever the number of courses, students and jobs; only
its actions (a warning, a stopped job) cost a few queries each. Every step is idempotent: notices and overruns are
unique rows, and a job already asked to stop is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from core.choices import JobState
from core.figures import gpu_hours
from courses import terms
from courses.budgets import WARN_LEVELS
from courses.models import BudgetNotice, BudgetOverrun, Course

from . import budget_news
from .budgets import Standing, standings
from .cancellation import request_cancel
from .models import Job


@dataclass
class Report:
    warned: int = 0
    overruns: int = 0
    stopped: list[str] = field(default_factory=list)


def courses_with_budgets():
    return Course.objects.filter(Q(student_gpu_hours__isnull=False) | Q(course_gpu_hours__isnull=False))


def run(now: datetime | None = None) -> Report:
    now = now or timezone.now()
    report = Report()
    courses = [c for c in courses_with_budgets() if not terms.has_ended(c, now)]
    students, whole = standings(courses, now)
    report.warned = _warn(students, now)
    overruns = _record_overruns(students + whole, now)
    report.overruns = len(overruns)
    report.stopped = _stop(overruns, now)
    return report


def _warn(students: list[Standing], now: datetime) -> int:
    due = {(s.course.pk, s.student_id, s.period.start, level): (s, level) for s in students for level in _levels(s)}
    if not due:
        return 0
    seen = BudgetNotice.objects.filter(
        course_id__in={k[0] for k in due}, period_start__in={k[2] for k in due}
    ).values_list("course_id", "student_id", "period_start", "level")
    told = 0
    for key in set(due) - set(seen):
        # Claimed one by one, so that of two passes at once only the one that wrote the row tells.
        _, claimed = BudgetNotice.objects.get_or_create(
            course_id=key[0], student_id=key[1], period_start=key[2], level=key[3]
        )
        if claimed:
            budget_news.tell_level(*due[key], now)
            told += 1
    return told


def _levels(standing: Standing) -> list[int]:
    # Only the highest level reached is told: a budget that jumps past 95 % does not send the 80 % one as well.
    reached = [level for level in WARN_LEVELS if standing.percent >= level and not standing.exhausted]
    return reached[-1:]


def _record_overruns(all_standings: list[Standing], now: datetime) -> list[tuple[Standing, BudgetOverrun]]:
    """The used-up budgets with their overrun rows (made now or earlier); rows of budgets with hours left again
    (topped up, raised) are removed, so a later overrun starts a new grace."""
    current = {(s.course.pk, s.student_id, s.period.start): s for s in all_standings}
    rows = {
        (o.course_id, o.student_id, o.period_start): o
        for o in BudgetOverrun.objects.filter(course_id__in={k[0] for k in current} or [0])
    }
    stale = [o.pk for key, o in rows.items() if key not in current or not current[key].exhausted]
    if stale:
        BudgetOverrun.objects.filter(pk__in=stale).delete()
    made = {}
    for key in [k for k, s in current.items() if s.exhausted and k not in rows]:
        overrun, claimed = BudgetOverrun.objects.get_or_create(
            course_id=key[0], student_id=key[1], period_start=key[2], defaults={"since": now}
        )
        made[key] = overrun
        if claimed:  # a pass running beside this one found it first: it told
            budget_news.tell_level(current[key], 100, now)
    return [(s, rows.get(k) or made[k]) for k, s in current.items() if s.exhausted]


def _stop(overruns: list[tuple[Standing, BudgetOverrun]], now: datetime) -> list[str]:
    due = [(s, o) for s, o in overruns if o.since + timedelta(minutes=s.course.budget_grace_minutes) <= now]
    if not due:
        return []
    which = Q()
    for standing, _ in due:
        which |= Q(course_id=standing.course.pk, **({"owner_id": standing.student_id} if standing.student_id else {}))
    why = {(s.course.pk, s.student_id): _why(s, o) for s, o in due}
    stopped = []
    running = Job.objects.filter(which, state=JobState.RUNNING, cancel_requested_at__isnull=True)
    for job in running.select_related("cluster", "template"):
        message = why.get((job.course_id, job.owner_id)) or why[(job.course_id, None)]
        request_cancel(None, job, why=message)
        stopped.append(str(job.pk))
    return stopped


def _why(standing: Standing, overrun: BudgetOverrun) -> str:
    whose = "the student's" if standing.student_id else "the course's shared"
    return (
        f"Stopped by the portal: {whose} GPU-hour budget in {standing.course.name} ran out "
        f"({gpu_hours(standing.used)} of {gpu_hours(standing.limit)} GPU-hours used) "
        f"at {terms.when(overrun.since)}, and the "
        f"course's grace of {standing.course.budget_grace_minutes} minute(s) has passed."
    )
