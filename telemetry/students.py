"""One row per enrolled student: what the class dashboard's student table shows and the per-student CSV exports.

Summed in the database in two queries whatever the class's size or history: the jobs grouped by (student, GPUs per
job), and the enrolled students with their newest job's state. Instructors and TAs who launch jobs are not students,
so they get no row (sixty students, sixty rows).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import (
    Case,
    Count,
    DateTimeField,
    DurationField,
    ExpressionWrapper,
    F,
    Max,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
)
from django.utils import timezone

from core.choices import JobState
from courses.models import Role
from jobs.models import Job

FAILED_STATES = frozenset({JobState.FAILED, JobState.TIMED_OUT, JobState.SUBMIT_FAILED, JobState.LOST})
WAITING_STATES = frozenset({JobState.QUEUED, JobState.SUBMITTING, JobState.PENDING})
STUCK_AFTER = timedelta(minutes=15)  # a job still waiting this long after it was launched is stuck

CSV_COLUMNS = [
    "student",
    "name",
    "jobs",
    "completed",
    "failed",
    "cancelled",
    "running",
    "waiting",
    "gpu_hours",
    "mean_gpu_util_pct",
    "last_job_state",
    "last_activity",
]


@dataclass
class StudentRow:
    username: str
    name: str
    jobs: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    running: int = 0
    waiting: int = 0
    stuck: int = 0  # waiting longer than STUCK_AFTER, or told by the scheduler it will never start
    gpu_hours: float = 0.0
    util_sum: float = 0.0
    samples: int = 0
    last_state: str = ""
    last_activity: datetime | None = None
    flags: list[str] = field(default_factory=list)

    @property
    def mean_util(self) -> float | None:
        return self.util_sum / self.samples if self.samples else None

    def csv_row(self) -> list:
        mean = self.mean_util
        return [
            self.username,
            self.name,
            self.jobs,
            self.completed,
            self.failed,
            self.cancelled,
            self.running,
            self.waiting,
            round(self.gpu_hours, 4),
            "" if mean is None else round(mean, 1),
            self.last_state,
            self.last_activity.isoformat() if self.last_activity else "",
        ]


def class_rows(course, now: datetime | None = None) -> list[StudentRow]:
    """The course's enrolled students, by username, each with their jobs' counts, GPU-hours and flags."""
    now = now or timezone.now()
    newest = Job.objects.filter(course=course, owner=OuterRef("user")).order_by("-created_at").values("state")[:1]
    enrolled = (
        course.enrollments.filter(role=Role.STUDENT)
        .annotate(last_state=Subquery(newest))
        .values_list("user_id", "user__username", "user__first_name", "user__last_name", "last_state")
        .order_by("user__username")
    )
    rows: dict[int, StudentRow] = {}
    for user_id, username, first, last, last_state in enrolled:
        rows[user_id] = StudentRow(username, f"{first} {last}".strip() or username, last_state=last_state or "")
    totals = _job_totals(course, now)
    for row_id, row in rows.items():
        for group in totals.get(row_id, []):
            _add(row, group)
        row.flags = _flags(row)
    return list(rows.values())


def _job_totals(course, now: datetime) -> dict[int, list[dict]]:
    running = Q(state=JobState.RUNNING)
    ran_until = Case(When(running, then=Value(now)), default=F("finished_at"), output_field=DateTimeField())
    held = ExpressionWrapper(ran_until - F("started_at"), output_field=DurationField())
    counted = Q(started_at__isnull=False) & (running | Q(finished_at__gt=F("started_at")))
    # The demo's stand-in GPUs replay recorded figures: they are no student's utilization.
    measured = Q(summary__mean_gpu_util__isnull=False, summary__samples__gt=0, summary__simulated_gpus=False)
    waiting = Q(state__in=WAITING_STATES)
    stuck = waiting & (Q(created_at__lt=now - STUCK_AFTER) | Q(never_starts_since__isnull=False))
    groups = (
        Job.objects.filter(course=course)
        .values("owner_id", "gpus")
        .annotate(
            jobs=Count("pk"),
            completed=Count("pk", filter=Q(state=JobState.COMPLETED)),
            failed=Count("pk", filter=Q(state__in=FAILED_STATES)),
            cancelled=Count("pk", filter=Q(state=JobState.CANCELLED)),
            running=Count("pk", filter=running),
            waiting=Count("pk", filter=waiting),
            stuck=Count("pk", filter=stuck),
            held=Sum(held, filter=counted),
            util_sum=Sum(F("summary__mean_gpu_util") * F("summary__samples"), filter=measured),
            samples=Sum("summary__samples", filter=measured),
            created=Max("created_at"),
            finished=Max("finished_at"),
            started=Max("started_at"),
        )
        .order_by()
    )
    by_owner: dict[int, list[dict]] = defaultdict(list)
    for group in groups:
        by_owner[group["owner_id"]].append(group)
    return by_owner


def _add(row: StudentRow, group: dict) -> None:
    for name in ("jobs", "completed", "failed", "cancelled", "running", "waiting", "stuck"):
        setattr(row, name, getattr(row, name) + group[name])
    if group["held"]:
        row.gpu_hours += group["gpus"] * group["held"].total_seconds() / 3600
    row.util_sum += group["util_sum"] or 0.0
    row.samples += group["samples"] or 0
    moments = [m for m in (group["created"], group["started"], group["finished"], row.last_activity) if m]
    row.last_activity = max(moments) if moments else None


def _flags(row: StudentRow) -> list[str]:
    """What the dashboard's filter buttons pick a student by (idle is live: the page's script adds it)."""
    flags = []
    if row.stuck:
        flags.append("stuck")
    if row.waiting:
        flags.append("waiting")
    if row.last_state in FAILED_STATES:
        flags.append("failed")
    return flags
