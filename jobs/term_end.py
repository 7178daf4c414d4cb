"""The end of a course's term, run by a beat task: instructors told a week before, students with unfinished jobs
warned a day before, and at the end every unfinished job of the course cancelled through the normal path.

Safe to run twice, at once, or late: each message is recorded (courses.TermNotice, unique per person, kind and
end) before its mail task is queued, and a job whose cancellation was already asked for is not asked again. A run
that comes after the end sends no warning any more; it only stops what still runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from core.choices import ACTIVE_STATES
from courses import terms
from courses.models import Course, Role, TermNotice

from . import enqueue
from .cancellation import CancelRefused, request_cancel
from .models import Job


@dataclass
class TermReport:
    told_instructors: int = 0
    warned_students: int = 0
    cancelled: int = 0


def run(now: datetime | None = None) -> TermReport:
    now = now or timezone.now()
    report = TermReport()
    report.told_instructors = tell_instructors(now)
    report.warned_students = warn_students(now)
    report.cancelled = stop_ended(now)
    return report


def tell_instructors(now: datetime) -> int:
    sent = 0
    ending = Course.objects.filter(term_ends_at__gt=now, term_ends_at__lte=now + terms.INSTRUCTOR_NOTICE)
    for course in ending:
        for enrollment in course.enrollments.filter(role=Role.INSTRUCTOR).select_related("user"):
            sent += send_once(course, enrollment.user, TermNotice.Kind.ENDING_SOON)
    return sent


def warn_students(now: datetime) -> int:
    sent = 0
    jobs = Job.objects.filter(
        state__in=ACTIVE_STATES,
        course__term_ends_at__gt=now,
        course__term_ends_at__lte=now + terms.STUDENT_WARNING,
    ).select_related("course", "owner")
    owners = {(job.course, job.owner) for job in jobs}
    for course, owner in owners:
        sent += send_once(course, owner, TermNotice.Kind.JOBS_WILL_STOP)
    return sent


def stop_ended(now: datetime) -> int:
    """Cancel every unfinished job of a course whose term has ended and whose cancellation nobody asked for."""
    cancelled = 0
    jobs = Job.objects.filter(
        state__in=ACTIVE_STATES, cancel_requested_at__isnull=True, course__term_ends_at__lte=now
    ).select_related("course", "cluster")
    for job in jobs:
        if job.course.term_ends_at is None:  # the query asked for an end before now
            continue
        ended = terms.when(job.course.term_ends_at)
        why = f"The term of {job.course.name} ended on {ended}; the portal stopped the job."
        try:
            request_cancel(None, job, why=why)
            cancelled += 1
        except CancelRefused:  # it ended on its own meanwhile
            continue
    return cancelled


def send_once(course: Course, user, kind: str) -> int:
    """Queue one term message unless it was queued already; 1 if this call queued it."""
    if not user.email or course.term_ends_at is None:
        return 0  # the page notice still tells them (a course without a term end has nothing to tell)
    try:
        with transaction.atomic():
            notice = TermNotice.objects.create(course=course, user=user, kind=kind, term_ends_at=course.term_ends_at)
    except IntegrityError:
        return 0
    enqueue.term_notice(notice.pk)  # after the commit; the mail task calls send_notice below
    return 1


def send_notice(notice_id: int) -> bool:
    """Compose and send one recorded notice (the mail task calls this); False if it is gone. Relay errors go up to
    the task, which retries the transient ones."""
    notice = TermNotice.objects.select_related("course", "user").filter(pk=notice_id, mailed_at__isnull=True).first()
    if notice is None or not notice.user.email:
        return False
    compose = _instructor_mail if notice.kind == TermNotice.Kind.ENDING_SOON else _student_mail
    subject, body = compose(notice.course, notice.term_ends_at)
    send_mail(subject, body, None, [notice.user.email])
    TermNotice.objects.filter(pk=notice.pk).update(mailed_at=timezone.now())
    return True


def _instructor_mail(course: Course, term_ends_at: datetime) -> tuple[str, str]:
    ends = terms.when(term_ends_at)
    subject = f"{course.name}: the term ends on {ends}"
    body = (
        f"The term of {course.name} ends on {ends}.\n\n"
        "Then the portal stops every job of the course that is still running or waiting, and the course becomes "
        "read-only: no launches, template edits, quota or roster changes. Its pages, job history, logs and reports "
        "stay readable.\n\n"
        "To teach the course again, open the course page and use “Copy to a new term”: it carries the templates, "
        "clusters, quotas and settings, not the people or the jobs.\n\n"
        f"Course page: {_link(reverse('courses:jobs', args=[course.slug]))}\n"
    )
    return subject, body


def _student_mail(course: Course, term_ends_at: datetime) -> tuple[str, str]:
    ends = terms.when(term_ends_at)
    subject = f"{course.name}: your running jobs stop on {ends}"
    body = (
        f"The term of {course.name} ends on {ends}. Jobs of yours that are still running or waiting then will be "
        "stopped by the portal.\n\n"
        "Save what you need from them (checkpoints, results) before that time. Their logs and history stay "
        f"readable in the portal afterwards.\n\nYour jobs: {_link(reverse('jobs:my_jobs'))}\n"
    )
    return subject, body


def _link(path: str) -> str:
    return settings.PORTAL_URL + path
