"""Who is in a course and in which role: enrolling, changing a role and removing someone, each audited.

Invariant: enrollments change only through these functions (the roster page and the roster import call them), each
change is written as a RosterChange in the same transaction, and a course that has an instructor keeps one: the
instructors' rows are locked before one of them is demoted or removed, so two instructors demoting each other at
the same moment cannot both succeed.
"""

from __future__ import annotations

from django.db import transaction

from .models import Course, Enrollment, Role, RosterAction, RosterChange


class LastInstructor(Exception):
    """The change would leave the course without an instructor; the message says what to do instead."""


def _actor_name(actor) -> str:
    if isinstance(actor, str):  # a process, not a person: e.g. "campus group sync"
        return actor
    return actor.get_username() if actor is not None else "roster import"


def _record(course: Course, user, action: str, actor, old_role: str = "", new_role: str = "") -> None:
    RosterChange.objects.create(
        course=course,
        person=user,
        person_username=user.get_username(),
        actor=None if isinstance(actor, str) else actor,
        actor_username=_actor_name(actor),
        action=action,
        old_role=old_role,
        new_role=new_role,
    )


def lock_instructors(course: Course) -> list[int]:
    """Lock the course's instructor enrollments (inside a transaction) and return their user ids."""
    rows = Enrollment.objects.select_for_update().filter(course=course, role=Role.INSTRUCTOR)
    return list(rows.values_list("user_id", flat=True))


def _keep_an_instructor(course: Course, enrollment: Enrollment, instructors: list[int]) -> None:
    if enrollment.role == Role.INSTRUCTOR and instructors == [enrollment.user_id]:
        raise LastInstructor(
            f"{enrollment.user.get_username()} is the last instructor of {course.name}. "
            "Make someone else an instructor first."
        )


def enroll(course: Course, user, role: str, *, actor=None, enrollment: Enrollment | None = None) -> Enrollment:
    """Enroll someone; `enrollment`: an unsaved row to save (the admin's form builds one)."""
    with transaction.atomic():
        enrollment = enrollment or Enrollment(course=course, user=user, role=role)
        enrollment.save()
        _record(course, user, RosterAction.ENROLLED, actor, new_role=role)
    return enrollment


def set_role(course: Course, enrollment: Enrollment, role: str, *, actor=None, keep_an_instructor=True) -> bool:
    """Change one person's role; False when it already was that role. Raises LastInstructor."""
    with transaction.atomic():
        instructors = lock_instructors(course)  # first, so every change takes its locks in one order
        current = Enrollment.objects.select_for_update(of=("self",)).select_related("user").get(pk=enrollment.pk)
        if current.role == role:
            return False
        if keep_an_instructor:
            _keep_an_instructor(course, current, instructors)
        old_role, current.role = current.role, role
        current.save(update_fields=["role"])
        _record(course, current.user, RosterAction.ROLE_CHANGED, actor, old_role=old_role, new_role=role)
    enrollment.role = role
    return True


def remove(course: Course, enrollment: Enrollment, *, actor=None, keep_an_instructor=True) -> None:
    """Take someone off the course. Their account, jobs, logs and charts stay; they can no longer launch here,
    and their unfinished jobs run on until they end or someone cancels them. Raises LastInstructor."""
    with transaction.atomic():
        instructors = lock_instructors(course)
        current = (
            Enrollment.objects.select_for_update(of=("self",)).select_related("user").filter(pk=enrollment.pk).first()
        )
        if current is None:
            return
        if keep_an_instructor:
            _keep_an_instructor(course, current, instructors)
        current.delete()
        _record(course, current.user, RosterAction.REMOVED, actor, old_role=current.role)
