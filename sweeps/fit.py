"""Whether a sweep fits the student's limits, said before anything is submitted.

GPU-hours: each run is estimated from the template's earlier completed runs (their median time, at this sweep's GPUs),
else from its time limit, and the whole sweep is held against what is left of the student's and the course's budgets;
a sweep that does not fit is refused, saying how many runs would. Runs at once: the array's %K is what the student's
concurrent-job and GPU limits leave free, so a sweep larger than the limits waits its turn instead of being refused
(on Kubernetes the course's namespace quota is those limits times its students, so the runs stay inside it too).
Quotas and budgets bind students; instructors and admins launch freely, as with single jobs (jobs/launch.py).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from django.db.models import Count, Sum

from core.choices import ACTIVE_STATES, JobState
from core.figures import gpu_hours
from courses import quotas
from courses.models import Role
from jobs import access, budgets
from jobs.models import Job

HISTORY_RUNS = 20  # the latest completed runs of a template that its estimate reads


@dataclass(frozen=True)
class Fit:
    runs: int
    gpus_per_run: int  # the largest run's, where a sweep varies its GPUs
    hours_per_run: float  # GPU-hours one run is expected to take (on average, where runs differ)
    from_runs: int  # how many earlier runs the estimate comes from; 0: from the time limit
    at_once: int  # the array's %K; 0 when nothing may start now
    left: float | None  # GPU-hours left in the tighter budget; None when no budget binds
    refusal: str = ""  # why the sweep cannot be launched now, in words that say what to do

    @property
    def total_hours(self) -> float:
        return self.runs * self.hours_per_run

    @property
    def runs_fitting(self) -> int:
        if self.left is None or self.hours_per_run <= 0:
            return self.runs
        return min(self.runs, math.floor(self.left / self.hours_per_run + 1e-9))

    def summary(self) -> str:
        basis = f"the median of {self.from_runs} earlier run(s)" if self.from_runs else "the time limit"
        budget = f" of the {gpu_hours(self.left)} left in your budget" if self.left is not None else ""
        return (
            f"{self.runs} run(s), about {gpu_hours(self.total_hours)} GPU-hours{budget} (from {basis}); "
            f"{self.at_once} at a time."
        )


def hours_per_run(template, gpus: int, minutes: int) -> tuple[float, int]:
    """(GPU-hours one run takes, how many earlier runs that comes from)."""
    if gpus <= 0:
        return 0.0, 0
    ran = (
        Job.objects.filter(template=template, state=JobState.COMPLETED, started_at__isnull=False)
        .exclude(finished_at=None)
        .order_by("-finished_at")
        .values_list("started_at", "finished_at")[:HISTORY_RUNS]
    )
    hours = [(end - start).total_seconds() / 3600 for start, end in ran if start and end]
    if hours:
        limit = minutes / 60 if minutes else math.inf
        return gpus * min(statistics.median(hours), limit), len(hours)
    return gpus * (minutes or 60) / 60, 0


def fit(user, course, template, *, shapes: list[tuple[int, int]], asked_at_once: int | None = None) -> Fit:
    """`shapes`: each run's (GPUs, time limit in minutes); they differ where the sweep varies a resource. Runs at once
    are counted as the largest run, so that any K of them fit. Call under the user's row lock (launch.py) so that
    simultaneous launches take turns, as jobs/launch.py does."""
    runs = len(shapes)
    estimates = {shape: hours_per_run(template, *shape) for shape in set(shapes)}
    per_run = sum(estimates[shape][0] for shape in shapes) / runs if runs else 0.0
    from_runs = min(found for _, found in estimates.values()) if estimates else 0
    gpus = max((g for g, _ in shapes), default=0)
    wanted = min(runs, asked_at_once or runs)
    if access.is_admin(user) or access.role_in(user, course) == Role.INSTRUCTOR:
        return Fit(runs, gpus, per_run, from_runs, wanted, None)
    refusal = budgets.launch_refusal(course, user) or ""
    mine, whole = budgets.standing_of(course, user)
    lefts = [s.left for s in (mine, whole) if s is not None]
    left = min(lefts) if lefts else None
    at_once, quota_refusal = _at_once(user, course, gpus, wanted)
    result = Fit(runs, gpus, per_run, from_runs, at_once, left)
    if not refusal and result.runs_fitting < runs:
        each = f"{gpu_hours(per_run)} each" if len(estimates) == 1 else f"{gpu_hours(per_run)} each on average"
        refusal = (
            f"This sweep needs about {gpu_hours(result.total_hours)} GPU-hours for {runs} runs "
            f"({each}), and your budget has {gpu_hours(left)} left: "
            f"{result.runs_fitting} run(s) fit. Sweep fewer values, or ask your instructor for a top-up."
        )
    return Fit(runs, gpus, per_run, from_runs, at_once, left, refusal or quota_refusal)


def _at_once(user, course, gpus: int, wanted: int) -> tuple[int, str]:
    """How many runs may run together inside the student's limits, and why none may, if none may."""
    limits = quotas.limits_for(course, user)
    active = Job.objects.filter(owner=user, course=course, state__in=ACTIVE_STATES, never_starts_since__isnull=True)
    totals = active.aggregate(jobs=Count("pk"), gpus=Sum("gpus"))
    free_jobs = limits.max_concurrent_jobs - totals["jobs"]
    if free_jobs < 1:
        return 0, (
            f"You already have {totals['jobs']} unfinished job(s) in {course.name}, as many as your limit of "
            f"{limits.max_concurrent_jobs}. Wait for one to finish or cancel one, then launch the sweep."
        )
    free_gpus = limits.max_gpus - (totals["gpus"] or 0)
    if gpus > limits.max_gpus:
        return 0, f"Each run asks for {gpus} GPU(s); your limit is {limits.max_gpus}. Ask for fewer GPUs per run."
    by_gpus = free_gpus // gpus if gpus else wanted
    if by_gpus < 1:
        return (
            0,
            f"Your unfinished jobs hold {totals['gpus']} of your {limits.max_gpus} GPU(s); wait for one to finish.",
        )
    return min(wanted, free_jobs, by_gpus), ""
