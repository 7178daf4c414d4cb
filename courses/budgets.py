"""GPU-hour budgets: a course's settings, their periods, and instructors' top-ups, all audited.

A course may give each student GPU-hours per week (resetting Monday 00:00 in the portal's time zone) or per term,
and the whole course GPU-hours over its term (since its creation when it has no term). Settings change only
through set_settings and top-ups only through top_up; each writes a BudgetChange in the same transaction. A top-up
adds to the student's current period only. How much is used is the jobs app's business (jobs/budgets.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from . import terms
from .models import BudgetChange, BudgetPeriod, Course

# Out-of-range values are typing slips: refused with these bounds in the message.
MIN_HOURS = Decimal("0.01")  # 36 GPU-seconds: the smallest budget or top-up
MAX_STUDENT_HOURS = 10_000
MAX_COURSE_HOURS = 1_000_000
MAX_GRACE_MINUTES = 24 * 60
MAX_TOP_UP_HOURS = 1_000
WARN_LEVELS = (80, 95)  # per cent of a budget at which the student is told, once per period
SETTINGS = ("budget_period", "student_gpu_hours", "course_gpu_hours", "budget_grace_minutes")
IDLE_SETTINGS = (
    "idle_util_below",
    "idle_warn_minutes",
    "idle_cancel_minutes",
    "session_idle_minutes",
)  # the idle rule, audited alike
MAX_IDLE_MINUTES = 24 * 60


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime | None  # None: never resets


def has_budget(course: Course) -> bool:
    return course.student_gpu_hours is not None or course.course_gpu_hours is not None


def student_period(course: Course, now: datetime | None = None) -> Period:
    now = now or timezone.now()
    if course.budget_period == BudgetPeriod.WEEK:
        local = timezone.localtime(now)
        monday = (local - timedelta(days=local.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
        return Period(monday, monday + timedelta(days=7))
    return course_period(course)


def course_period(course: Course) -> Period:
    if (term := terms.term(course)) is not None:
        return Period(*term)
    return Period(course.created_at, None)


def setting_errors(values: dict) -> dict[str, str]:
    """What is out of range in budget settings, by field, in words that say what to type."""
    errors = {}
    bounds = {
        "student_gpu_hours": (MIN_HOURS, MAX_STUDENT_HOURS, "GPU-hours per student"),
        "course_gpu_hours": (MIN_HOURS, MAX_COURSE_HOURS, "GPU-hours for the course"),
        "budget_grace_minutes": (0, MAX_GRACE_MINUTES, "The grace"),
        "idle_util_below": (1, 100, "Idle below"),
        "idle_warn_minutes": (1, MAX_IDLE_MINUTES, "Warn after idle"),
        "idle_cancel_minutes": (1, MAX_IDLE_MINUTES, "Cancel after the warning"),
        "session_idle_minutes": (1, MAX_IDLE_MINUTES, "End idle sessions after"),
    }
    for name, (low, high, label) in bounds.items():
        value = values.get(name)
        if value is not None and not low <= value <= high:
            empty = {
                "student_gpu_hours": " Leave it empty for no budget.",
                "course_gpu_hours": " Leave it empty for no budget.",
                "idle_util_below": " Leave it empty for no idle rule.",
                "session_idle_minutes": " Leave it empty to let sessions run to their time limit.",
            }.get(name, "")
            errors[name] = f"{label} must be between {low} and {high}.{empty}"
    if values.get("budget_period") not in (None, *BudgetPeriod.values):
        errors["budget_period"] = "Pick per week or per term."
    return errors


def _actor(actor) -> dict:
    authenticated = getattr(actor, "is_authenticated", False)
    return {"actor": actor if authenticated else None, "actor_username": getattr(actor, "username", "") or "system"}


def _text(value) -> str:
    if isinstance(value, Decimal):
        return f"{value.normalize():f}"
    return "" if value is None else str(value)


@transaction.atomic
def set_settings(course: Course, values: dict, *, actor) -> int:
    """Change the course's budget settings (values already checked by setting_errors); how many changed."""
    changed = [name for name in SETTINGS + IDLE_SETTINGS if name in values and values[name] != getattr(course, name)]
    for name in changed:
        BudgetChange.objects.create(
            course=course,
            what=name,
            old_value=_text(getattr(course, name)),
            new_value=_text(values[name]),
            **_actor(actor),
        )
        setattr(course, name, values[name])
    if changed:
        Course.objects.filter(pk=course.pk).update(**{name: values[name] for name in changed})
    return len(changed)


def top_up_error(hours) -> str | None:
    if hours is None or not MIN_HOURS <= hours <= MAX_TOP_UP_HOURS:
        return f"A top-up is between {MIN_HOURS} and {MAX_TOP_UP_HOURS} GPU-hours."
    return None


@transaction.atomic
def top_up(course: Course, student, hours: Decimal, *, actor, reason: str = "", now: datetime | None = None):
    """Give `student` `hours` more GPU-hours for their current period (hours already checked by top_up_error)."""
    period = student_period(course, now)
    before = topped_up(course, student, period)
    return BudgetChange.objects.create(
        course=course,
        student=student,
        what=BudgetChange.What.TOP_UP,
        old_value=_text(before),
        new_value=_text(before + hours),
        hours=hours,
        period_start=period.start,
        reason=reason[:200],
        **_actor(actor),
    )


def topped_up(course: Course, student, period: Period) -> Decimal:
    rows = BudgetChange.objects.filter(
        course=course, student=student, what=BudgetChange.What.TOP_UP, period_start=period.start
    )
    return rows.aggregate(h=Sum("hours"))["h"] or Decimal(0)


def top_ups_by_student(courses, periods: dict[int, Period]) -> dict[tuple[int, int], Decimal]:
    """{(course id, student id): hours} of the current periods of many courses, in one query."""
    if not courses:
        return {}
    rows = (
        BudgetChange.objects.filter(what=BudgetChange.What.TOP_UP, course_id__in=[c.pk for c in courses])
        .values("course_id", "student_id", "period_start")
        .annotate(h=Sum("hours"))
    )
    return {
        (r["course_id"], r["student_id"]): r["h"] for r in rows if r["period_start"] == periods[r["course_id"]].start
    }
