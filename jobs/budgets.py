"""How much of each GPU-hour budget is used: GPUs x elapsed of every job that ran in the budget's period, running
jobs counted up to now (so they burn live), finished ones up to their end.

Invariant: `standings` answers for any number of courses and students with a fixed number of queries (one sum per
kind of budget, one for top-ups), so the per-minute pass costs the same for ten jobs as for a thousand.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Case, DateTimeField, DurationField, ExpressionWrapper, F, Q, Sum, Value, When
from django.db.models.functions import Coalesce, Greatest, Least
from django.utils import timezone

from core.figures import gpu_hours
from courses import budgets, terms
from courses.budgets import Period
from courses.models import Course

from .models import Job


@dataclass(frozen=True)
class Standing:
    """One budget now: a student's (student_id set) or the course's total."""

    course: Course
    student_id: int | None
    limit: float  # GPU-hours, top-ups included
    used: float
    period: Period

    @property
    def left(self) -> float:
        return max(0.0, self.limit - self.used)

    @property
    def percent(self) -> float:
        return 100.0 * self.used / self.limit if self.limit else 100.0

    @property
    def exhausted(self) -> bool:
        return self.used >= self.limit

    def describe(self) -> str:
        whose = "Your" if self.student_id else f"{self.course.name}'s shared"
        resets = f"It resets on {terms.when(self.period.end)}." if self.period.end else "It does not reset this term."
        figures = f"{gpu_hours(self.used)} of {gpu_hours(self.limit)} used, {gpu_hours(self.left)} left"
        return f"{whose} GPU-hour budget: {figures}. {resets}"


def _hours_by(group: str, courses, periods: dict[int, Period], now: datetime, owner_id=None) -> dict:
    """{(course id[, owner id]): GPU-hours} inside each course's period, in one query."""
    if not courses:
        return {}
    ends = {c.pk: min(periods[c.pk].end or now, now) for c in courses}
    overlap = Q()
    for c in courses:
        overlap |= Q(course_id=c.pk, started_at__lt=ends[c.pk]) & (
            Q(finished_at__isnull=True) | Q(finished_at__gt=periods[c.pk].start)
        )
    start = Case(
        *[When(course_id=c.pk, then=Value(periods[c.pk].start)) for c in courses], output_field=DateTimeField()
    )
    end = Case(*[When(course_id=c.pk, then=Value(ends[c.pk])) for c in courses], output_field=DateTimeField())
    ran = ExpressionWrapper(
        Least(Coalesce(F("finished_at"), Value(now)), end) - Greatest(F("started_at"), start),
        output_field=DurationField(),
    )
    rows = Job.objects.filter(overlap, gpus__gt=0)
    if owner_id is not None:
        rows = rows.filter(owner_id=owner_id)
    keys = ["course_id", group] if group else ["course_id"]
    totals: defaultdict[tuple, float] = defaultdict(float)
    for row in rows.values(*keys, "gpus").annotate(ran=Sum(ran)).order_by():
        key = tuple(row[k] for k in keys)
        totals[key] += row["gpus"] * max(row["ran"] or timedelta(0), timedelta(0)).total_seconds() / 3600
    return totals


def standings(courses, now: datetime | None = None, *, student_id=None) -> tuple[list[Standing], list[Standing]]:
    """(students' standings, courses' standings) of the courses with budgets. A student appears once they ran
    something in the period or were topped up; `student_id` narrows to one student."""
    now = now or timezone.now()
    per_student = [c for c in courses if c.student_gpu_hours is not None]
    per_course = [c for c in courses if c.course_gpu_hours is not None]
    student_periods = {c.pk: budgets.student_period(c, now) for c in per_student}
    course_periods = {c.pk: budgets.course_period(c) for c in per_course}
    used = _hours_by("owner_id", per_student, student_periods, now, owner_id=student_id)
    extra = budgets.top_ups_by_student(per_student, student_periods)
    by_pk = {c.pk: c for c in per_student}
    students = []
    for key in set(used) | set(extra):
        if student_id is not None and key[1] != student_id:
            continue
        course = by_pk[key[0]]
        limit = float(course.student_gpu_hours + extra.get(key, 0))
        students.append(Standing(course, key[1], limit, used.get(key, 0.0), student_periods[course.pk]))
    totals = _hours_by("", per_course, course_periods, now)
    whole = [
        Standing(c, None, float(c.course_gpu_hours), totals.get((c.pk,), 0.0), course_periods[c.pk]) for c in per_course
    ]
    return students, whole


def standing_of(course: Course, student, now: datetime | None = None) -> tuple[Standing | None, Standing | None]:
    """(the student's standing, the course's) in one course; None where the course has no such budget."""
    if not budgets.has_budget(course):
        return None, None
    now = now or timezone.now()
    students, whole = standings([course], now, student_id=student.pk)
    mine = students[0] if students else None
    if mine is None and course.student_gpu_hours is not None:
        mine = Standing(course, student.pk, float(course.student_gpu_hours), 0.0, budgets.student_period(course, now))
    return mine, (whole[0] if whole else None)


def launch_refusal(course: Course, student, now: datetime | None = None) -> str | None:
    """Why a budget forbids a new launch now, with what is left and when it resets, or None."""
    mine, whole = standing_of(course, student, now)
    if mine is not None and mine.exhausted:
        return f"{mine.describe()} Ask your instructor for a top-up, or launch again once it resets."
    if whole is not None and whole.exhausted:
        return f"{whole.describe()} Your instructor can raise it on the course's budget page."
    return None
