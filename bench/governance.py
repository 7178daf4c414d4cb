"""One budget evaluation pass over 1,000 running jobs across 5 courses: how many queries it costs and how long.

    .venv/bin/python bench/governance.py [--jobs 1000] [--courses 5] [--finished 5000] [--passes 20]

Builds, in its own database (test_<DATABASE_URL name>), 5 courses with 40 students each, GPU-hour budgets (three
courses per week, two per term; every course with a total too, and a top-up for every fifth student), the running
jobs spread over the students (1 to 4 GPUs, started 1 to 50 minutes ago) and --finished jobs that ended earlier in
the period. The first pass writes the 80 % / 95 % notices it finds (their messages included); the passes after it
are the per-minute steady state. Printed: queries and milliseconds of the first pass and of the steady passes
(median and max). Target: a constant number of queries, <= 200 ms. Redis database BENCH_REDIS_DB (default 2).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import setup_database

STUDENTS_PER_COURSE = 40


def build(courses: int, running: int, finished: int) -> None:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from clusters.models import Cluster
    from core.choices import JobState
    from courses.models import BudgetChange, BudgetPeriod, Course, Enrollment
    from jobs.models import Job, JobTemplate

    rng = random.Random(7)
    now = timezone.now()
    cluster = Cluster.objects.create(name="bench", host="127.0.0.1", partitions=["debug"])
    template = JobTemplate.objects.create(name="Sleep", slug="sleep", body="sleep 1\n")
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"s{i}", email=f"s{i}@example.edu") for i in range(courses * STUDENTS_PER_COURSE)
    )
    students = {}
    for c in range(courses):
        weekly = c < 3
        course = Course.objects.create(
            slug=f"c{c}",
            name=f"Course {c}",
            budget_period=BudgetPeriod.WEEK if weekly else BudgetPeriod.TERM,
            student_gpu_hours=Decimal(40),
            course_gpu_hours=Decimal(100_000),
        )
        Course.objects.filter(pk=course.pk).update(created_at=now - timedelta(days=30))
        mine = users[c * STUDENTS_PER_COURSE : (c + 1) * STUDENTS_PER_COURSE]
        Enrollment.objects.bulk_create(Enrollment(course=course, user=u) for u in mine)
        students[course] = mine
    week_start = now - timedelta(days=now.weekday(), hours=now.hour, minutes=now.minute)
    jobs = []
    pairs = [(course, user) for course, mine in students.items() for user in mine]
    for i in range(running):
        course, user = pairs[i % len(pairs)]
        started = now - timedelta(minutes=rng.randint(1, 50))
        jobs.append(_job(Job, course, user, cluster, template, JobState.RUNNING, rng.randint(1, 4), started, None))
    for _ in range(finished):
        course, user = rng.choice(pairs)
        started = max(week_start, now - timedelta(hours=rng.uniform(1, 100)))
        ended = started + timedelta(minutes=rng.randint(5, 60))
        if ended < now:
            gpus = rng.randint(1, 4)
            jobs.append(_job(Job, course, user, cluster, template, JobState.COMPLETED, gpus, started, ended))
    Job.objects.bulk_create(jobs, batch_size=1000)
    BudgetChange.objects.bulk_create(
        BudgetChange(course=course, student=user, what="top_up", hours=Decimal(5), actor_username="bench")
        for course, user in pairs[::5]
    )
    print(f"{len(students)} courses, {len(pairs)} students, {running} running jobs, {len(jobs) - running} finished")


def _job(Job, course, user, cluster, template, state, gpus, started, ended):
    return Job(
        owner=user,
        course=course,
        template=template,
        cluster=cluster,
        script="sleep 1",
        state=state,
        gpus=gpus,
        started_at=started,
        finished_at=ended,
    )


def one_pass() -> tuple[int, float, object]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from jobs import budget_pass

    with CaptureQueriesContext(connection) as captured:
        started = time.perf_counter()
        report = budget_pass.run()
        elapsed = (time.perf_counter() - started) * 1000
    return len(captured), elapsed, report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--courses", type=int, default=5)
    parser.add_argument("--finished", type=int, default=5000)
    parser.add_argument("--passes", type=int, default=20)
    args = parser.parse_args()
    teardown = setup_database()
    try:
        build(args.courses, args.jobs, args.finished)
        queries, ms, report = one_pass()
        print(f"first pass: {queries} queries, {ms:.0f} ms ({report.warned} notices, {report.overruns} overruns)")
        figures = [one_pass() for _ in range(args.passes)]
        counts = sorted({q for q, _, _ in figures})
        times = [ms for _, ms, _ in figures]
        print(
            f"steady pass ({args.passes}x): queries {counts}, "
            f"median {statistics.median(times):.0f} ms, max {max(times):.0f} ms (target <= 200 ms)"
        )
    finally:
        teardown()


if __name__ == "__main__":
    main()
