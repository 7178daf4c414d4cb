"""Per-student quotas: a course's limits, or a student's override of them, and the audit of every change.

Invariant: quota fields change only through set_course_limits and set_overrides (the quota page and the course
admin both call them), and each changed value is written as a QuotaChange in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from .models import Course, QuotaChange, QuotaField, QuotaOverride

FIELDS = tuple(QuotaField.values)
MAX_VALUE = 10_000  # far above any lab; keeps typing slips out of the database


@dataclass(frozen=True)
class Limits:
    """What binds one student in one course."""

    max_concurrent_jobs: int
    max_gpus: int
    overridden: frozenset[str] = frozenset()  # the fields the student's override sets


def limits_for(course: Course, user) -> Limits:
    override = QuotaOverride.objects.filter(course=course, user_id=user.pk).first() if user.pk else None
    return _limits(course, override)


def _limits(course: Course, override: QuotaOverride | None) -> Limits:
    values = {name: getattr(course, name) for name in FIELDS}
    overridden = set()
    for name in FIELDS:
        own = getattr(override, name, None)
        if own is not None:
            values[name] = own
            overridden.add(name)
    return Limits(**values, overridden=frozenset(overridden))


def overrides_by_user(course: Course) -> dict[int, QuotaOverride]:
    return {o.user_id: o for o in QuotaOverride.objects.filter(course=course)}


def _record(course: Course, actor, field: str, old, new, student=None) -> QuotaChange:
    return QuotaChange.objects.create(
        course=course,
        student=student,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        actor_username=getattr(actor, "username", "") or "system",
        field=field,
        old_value=old,
        new_value=new,
    )


@transaction.atomic
def set_course_limits(course: Course, values: dict[str, int], *, actor, previous: dict[str, int] | None = None) -> int:
    """Set the course's limits; returns how many changed. `previous`: the values before an edit already applied
    to `course` (the admin form's case)."""
    before = previous or {name: getattr(course, name) for name in FIELDS}
    changed = [name for name in FIELDS if name in values and values[name] != before[name]]
    for name in changed:
        setattr(course, name, values[name])
        _record(course, actor, name, before[name], values[name])
    if changed:
        Course.objects.filter(pk=course.pk).update(**{name: values[name] for name in changed})
    return len(changed)


@transaction.atomic
def set_overrides(course: Course, student, values: dict[str, int | None], *, actor) -> int:
    """Set a student's own limits (None: the course's limit); returns how many changed."""
    override = QuotaOverride.objects.select_for_update().filter(course=course, user=student).first()
    before = {name: getattr(override, name, None) for name in FIELDS}
    changed = [name for name in FIELDS if name in values and values[name] != before[name]]
    if not changed:
        return 0
    override = override or QuotaOverride(course=course, user=student)
    for name in changed:
        setattr(override, name, values[name])
        _record(course, actor, name, before[name], values[name], student=student)
    if all(getattr(override, name) is None for name in FIELDS):
        if override.pk:
            override.delete()
    else:
        override.save()
    return len(changed)
