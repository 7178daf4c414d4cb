"""What the beat tells without a state move: ten minutes before a running job's time limit, and each course's
instructors' hourly digest of idle warnings ("5 students idle").

Safe to run often or late: each message is keyed (the job; the course and the hour), so notify() sends it once.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.urls import reverse
from django.utils import timezone

from clusters import kinds
from core.choices import JobState
from courses.models import Course
from jobs.models import Job

from . import notify
from .events import Channel, Event
from .models import Notification

WARN_BEFORE = timedelta(minutes=10)


def time_limit_soon(now: datetime | None = None) -> int:
    """Tell the owners of running jobs that reach their time limit within ten minutes; how many were told."""
    now = now or timezone.now()
    told = Notification.objects.filter(job=OuterRef("pk"), event=Event.TIME_LIMIT_SOON)
    running = (
        Job.objects.filter(state=JobState.RUNNING, started_at__isnull=False)
        .exclude(Exists(told))
        .select_related("owner", "cluster", "template", "course")
    )
    count = 0
    for job in running:
        minutes = kinds.kind_of(job.cluster.kind).time_limit_minutes(job)
        ends = job.started_at + timedelta(minutes=minutes) if minutes and job.started_at else None
        if ends and ends - WARN_BEFORE <= now < ends:
            left = max(1, round((ends - now).total_seconds() / 60))
            context = {"left": left}
            count += bool(notify(job.owner, Event.TIME_LIMIT_SOON, job=job, context=context))
    return count


def idle_digest(now: datetime | None = None) -> int:
    """Each course's idle warnings of the last full hour, as one digest to its instructors; how many courses."""
    end = (now or timezone.now()).replace(minute=0, second=0, microsecond=0)
    warned = Notification.objects.filter(
        event=Event.IDLE_WARNING, created_at__gte=end - timedelta(hours=1), created_at__lt=end, user__isnull=False
    ).exclude(channel=Channel.WEBHOOK)
    by_course: dict[int, set[str]] = {}
    for course_id, username in warned.values_list("course_id", "user__username").distinct():
        by_course.setdefault(course_id, set()).add(username)
    for course in Course.objects.filter(pk__in=[pk for pk in by_course if pk]):
        names = sorted(by_course[course.pk])
        text = f"{len(names)} student(s) of {course.name} had idle GPUs in the last hour: {', '.join(names)}."
        key = f"idle:{course.pk}:{end:%Y%m%d%H}"
        url = settings.PORTAL_URL + reverse("telemetry:dashboard", args=[course.slug])
        notify(
            course, Event.DIGEST, context={"key": key, "text": text, "subject": f"{course.slug}: idle GPUs", "url": url}
        )
    return len(by_course)
