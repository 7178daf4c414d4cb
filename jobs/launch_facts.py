"""What the launch form tells a student before they press Launch: their use of the course quota, and how long
earlier runs of the template took on each cluster.

Read-only facts for the page; the quota itself is enforced by jobs.launch.check_quota, under a row lock.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, F, Sum

from core.choices import ACTIVE_STATES, JobState
from courses import quotas
from courses.models import Role
from jobs import access

from .models import Job

ESTIMATE_RUNS = 50  # the most recent completed runs; older ones may predate a change to the template


@dataclass(frozen=True)
class QuotaUse:
    jobs: int
    max_jobs: int
    gpus: int
    max_gpus: int

    def __str__(self) -> str:
        return f"{self.jobs} of {self.max_jobs} jobs, {self.gpus} of {self.max_gpus} GPUs"

    @property
    def full(self) -> bool:
        return self.jobs >= self.max_jobs or self.gpus >= self.max_gpus


@dataclass(frozen=True)
class RunEstimate:
    cluster: str
    median: timedelta
    runs: int


def quota_use(user, course) -> QuotaUse | None:
    """The student's unfinished jobs and the GPUs they hold against their limits (the course's, or their own
    override); None where quotas do not bind the user (instructors and admins)."""
    if access.is_admin(user) or access.role_in(user, course) == Role.INSTRUCTOR:
        return None
    totals = Job.objects.filter(owner=user, course=course, state__in=ACTIVE_STATES).aggregate(
        jobs=Count("pk"), gpus=Sum("gpus")
    )
    limits = quotas.limits_for(course, user)
    return QuotaUse(totals["jobs"], limits.max_concurrent_jobs, totals["gpus"] or 0, limits.max_gpus)


def run_estimates(template, clusters) -> list[RunEstimate]:
    """Median run time of the template's recent completed runs, per cluster that has any (anyone's runs: the
    template and the cluster set the pace, not the student)."""
    estimates = []
    for cluster in clusters:
        durations = list(
            Job.objects.filter(
                template=template,
                cluster=cluster,
                state=JobState.COMPLETED,
                started_at__isnull=False,
                finished_at__gte=F("started_at"),
            )
            .order_by("-finished_at")
            .values_list("started_at", "finished_at")[:ESTIMATE_RUNS]
        )
        if durations:
            median = statistics.median((end - start).total_seconds() for start, end in durations if start and end)
            estimates.append(RunEstimate(cluster.display_name, timedelta(seconds=median), len(durations)))
    return estimates
