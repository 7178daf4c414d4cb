"""What a student is told about their GPU-hour budget: a warning level reached (80, 95 %), the budget used up, a
top-up. Each goes on the timeline of the unfinished jobs it concerns (the student's in the course, or every job of
the course for its shared budget) and, through a signal, to notifications (for a student's budget).

Callers tell each occurrence once: they first claim its row (a BudgetNotice or BudgetOverrun, a BudgetChange), so
a pass that runs twice tells nothing twice.
"""

from __future__ import annotations

from datetime import timedelta

from core.choices import ACTIVE_STATES, EventKind
from core.figures import gpu_hours
from courses import terms

from .budgets import Standing
from .models import Job
from .signals import budget_crossed, budget_topped_up
from .states import record_many


def tell_level(standing: Standing, level: int, now) -> None:
    """`level` 80 or 95 reached, or 100: used up (running jobs stop once the course's grace has passed)."""
    course = standing.course
    figures = (
        f"{gpu_hours(standing.used)} of {gpu_hours(standing.limit)} GPU-hours used, {gpu_hours(standing.left)} left"
    )
    if level >= 100:
        grace = course.budget_grace_minutes
        at = terms.when(now + timedelta(minutes=grace))
        stop = f"running jobs stop after the course's grace of {grace} minute(s), at {at}"
        whose = "The student's" if standing.student_id else "The course's shared"
        _on_timelines(course.pk, standing.student_id, f"{whose} GPU-hour budget is used up ({figures}); {stop}.")
        head = f"Your GPU-hour budget in {course.name} is used up; {stop}. "
    else:
        _on_timelines(course.pk, standing.student_id, f"The student's GPU-hour budget is {level} % used ({figures}).")
        head = f"You have used {level} % of your GPU-hour budget in {course.name}. "
    if standing.student_id is None:
        return  # the course's shared budget: its jobs' timelines say it; the stop itself is notified per job
    key = f"budget:{course.pk}:{standing.student_id}:{standing.period.start:%Y%m%d%H%M}:{level}"
    text = head + standing.describe().replace("Your GPU-hour budget: ", "")
    budget_crossed.send(sender=Standing, course=course, student_id=standing.student_id, level=level, text=text, key=key)


def tell_top_up(course, student, change) -> None:
    """`change`: the BudgetChange the top-up wrote (its actor is the instructor)."""
    why = f" ({change.reason})" if change.reason else ""
    hours = f"{change.hours.normalize():f}"
    _on_timelines(course.pk, student.pk, f"{hours} GPU-hour(s) added to the student's budget{why}.", actor=change.actor)
    text = f"Your instructor added {hours} GPU-hour(s) to your budget in {course.name}{why}."
    budget_topped_up.send(sender=Standing, course=course, student_id=student.pk, text=text, key=f"topup:{change.pk}")


def _on_timelines(course_id: int, student_id: int | None, message: str, *, actor=None) -> None:
    jobs = Job.objects.filter(course_id=course_id, state__in=ACTIVE_STATES).only("pk", "state")
    if student_id is not None:
        jobs = jobs.filter(owner_id=student_id)
    record_many(jobs, EventKind.NOTE, message, actor=actor)
