"""Course terms: when students may launch, and when a course becomes read-only.

A course with no dates has no term and is always open (courses made before terms existed). With a term,
students launch only from its start until its end; instructors and admins may also launch before the start, to
try the templates they prepare. From the end on the course is read-only through every page and the API: no
launches, no template edits or publishing, no quota or roster changes, for anyone. Its pages, jobs, logs and
reports stay readable, and an instructor may copy it to a new term. (Django's admin stays able to change the
course, so an admin can move a term's end.)
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.exceptions import PermissionDenied
from django.utils import timezone
from django.utils.formats import date_format

from .models import Course

# The course's instructors are told this long before the end (email once, and a notice on the course page).
INSTRUCTOR_NOTICE = timedelta(days=7)
# Students with unfinished jobs are warned this long before the end (email once, and a notice on their pages).
STUDENT_WARNING = timedelta(hours=24)


class CourseReadOnly(PermissionDenied):
    """The course's term has ended; the message says so, for the person who tried."""


def when(moment: datetime) -> str:
    """A term date as people read it, in the portal's time zone, with the zone named."""
    return date_format(timezone.localtime(moment), "D j M Y, H:i T")


def _now(now: datetime | None) -> datetime:
    return now or timezone.now()


def term(course: Course) -> tuple[datetime, datetime] | None:
    """The course's term as (start, end), or None: a course without one is open all the time."""
    start, end = course.term_starts_at, course.term_ends_at
    return (start, end) if start is not None and end is not None else None


def has_term(course: Course) -> bool:
    return term(course) is not None


def has_ended(course: Course, now: datetime | None = None) -> bool:
    found = term(course)
    return found is not None and found[1] <= _now(now)


def has_started(course: Course, now: datetime | None = None) -> bool:
    found = term(course)
    return found is None or found[0] <= _now(now)


def ends_within(course: Course, span: timedelta, now: datetime | None = None) -> bool:
    """The term is running and ends within `span` from now."""
    now = _now(now)
    found = term(course)
    return found is not None and now < found[1] <= now + span


def read_only_message(course: Course) -> str:
    ended = f" on {when(course.term_ends_at)}" if course.term_ends_at else ""
    return (
        f"The term of {course.name} ended{ended}, so the course is read-only: its jobs, "
        "logs and reports stay here, but nothing can be launched or changed. To teach it again, an instructor "
        "uses “Copy to a new term” on the course page."
    )


def launch_refusal(course: Course, *, teaches: bool, now: datetime | None = None) -> str | None:
    """Why nothing may be launched in the course now, or None. `teaches`: an instructor or admin, who may also
    launch before the start to try templates."""
    if has_ended(course, now):
        return read_only_message(course)
    if not teaches and not has_started(course, now) and course.term_starts_at is not None:
        return (
            f"{course.name} opens for launches on {when(course.term_starts_at)}. You can read its templates now "
            "and launch from then on."
        )
    return None


def check_writable(course: Course, now: datetime | None = None) -> None:
    """Raise CourseReadOnly (a 403 that says why) once the course's term has ended."""
    if has_ended(course, now):
        raise CourseReadOnly(read_only_message(course))


def term_errors(start: datetime | None, end: datetime | None, *, now: datetime | None = None) -> dict[str, str]:
    """What is wrong with a new term's dates, by field; `now` given: the end must also be in the future."""
    errors = {}
    if start and end and end <= start:
        errors["term_ends_at"] = "The term must end after it starts. Pick a later end date."
    elif now is not None and end and end <= now:
        errors["term_ends_at"] = f"This end is already past ({when(end)}). A new term must end in the future."
    return errors
