"""Telemetry pages: the instructor's class dashboard and report, and the admins' node pages.

The live parts arrive over the WebSocket (telemetry/consumers.py); these views render what the database knows.
"""

from __future__ import annotations

import csv
from collections import defaultdict

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import (
    Case,
    Count,
    DateTimeField,
    DurationField,
    ExpressionWrapper,
    F,
    Q,
    Sum,
    Value,
    When,
)
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from core.choices import ACTIVE_STATES, JobState
from jobs import access
from jobs.models import Job

from .access import get_node
from .models import Node
from .recorder import NODE_HISTORY_SECONDS
from .summary import REPORT_COLUMNS, course_report


@login_required
def course_dashboard(request, slug: str):
    course = access.get_course(request.user, slug, teach=True)
    counts = dict(Job.objects.filter(course=course).values_list("state").annotate(n=Count("pk")).order_by())
    states = [(state.label, state.value, counts.get(state.value, 0)) for state in JobState]
    students = _students(course)
    return render(
        request,
        "telemetry/course_dashboard.html",
        {
            "course": course,
            "manages": access.may_manage(request.user, course),
            "states": states,
            "students": students,
            "heatmap": _heatmap_labels(course, students),
            "running": counts.get(JobState.RUNNING, 0),
            "idle_seconds": int(settings.TELEMETRY_IDLE_SECONDS),
            "idle_minutes": round(settings.TELEMETRY_IDLE_SECONDS / 60, 1),
        },
    )


def _heatmap_labels(course, students: list[dict]) -> dict:
    """What the heatmap's frames do not carry: students' names, and which template each running job runs.

    Frames name a student by username and a job by id; a job that starts after the page opened reads "job 3f2a…".
    """
    running = Job.objects.filter(course=course, state__in=ACTIVE_STATES).values_list("pk", "template__slug")
    return {
        "names": {s["username"]: s["name"] for s in students},
        "jobs": {str(pk): f"{template} {str(pk)[:8]}" for pk, template in running},
    }


def _students(course) -> list[dict]:
    """Per student: jobs running, GPU-hours so far, mean utilization over their finished jobs.

    Summed in the database, one row per (student, GPUs per job): the page costs the same with 100 jobs or 100,000.
    """
    now = timezone.now()
    running = Q(state=JobState.RUNNING)
    ran_until = Case(When(running, then=Value(now)), default=F("finished_at"), output_field=DateTimeField())
    held = ExpressionWrapper(ran_until - F("started_at"), output_field=DurationField())
    counted = Q(started_at__isnull=False) & (running | Q(finished_at__gt=F("started_at")))
    measured = Q(summary__mean_gpu_util__isnull=False, summary__samples__gt=0)
    rows = (
        Job.objects.filter(course=course, started_at__isnull=False)
        .values_list("owner__username", "gpus")
        .annotate(
            running=Count("pk", filter=running),
            held=Sum(held, filter=counted),
            util_sum=Sum(F("summary__mean_gpu_util") * F("summary__samples"), filter=measured),
            samples=Sum("summary__samples", filter=measured),
        )
        .order_by()
    )
    students: dict[str, dict] = defaultdict(lambda: {"running": 0, "gpu_hours": 0.0, "util_sum": 0.0, "samples": 0})
    for username, gpus, running_count, held_for, util_sum, samples in rows:
        student = students[username]
        student["running"] += running_count
        if held_for:
            student["gpu_hours"] += gpus * held_for.total_seconds() / 3600
        student["util_sum"] += util_sum or 0.0
        student["samples"] += samples or 0
    enrolled = course.enrollments.filter(role="student").values_list(
        "user__username", "user__first_name", "user__last_name"
    )
    names = {username: f"{first} {last}".strip() or username for username, first, last in enrolled}
    table = []
    for username in sorted(set(names) | set(students)):
        s = students.get(username) or {"running": 0, "gpu_hours": 0.0, "samples": 0}
        mean = s["util_sum"] / s["samples"] if s["samples"] else None
        table.append(
            {
                "username": username,
                "name": names.get(username, username),
                "running": s["running"],
                "gpu_hours": round(s["gpu_hours"], 4),
                "mean_util": mean,
            }
        )
    return table


@login_required
def course_report_csv(request, slug: str):
    course = access.get_course(request.user, slug, teach=True)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{course.slug}-gpu-report.csv"'
    writer = csv.writer(response)
    writer.writerow(REPORT_COLUMNS)
    writer.writerows(course_report(course))
    return response


@login_required
def node_list(request):
    if not access.is_admin(request.user):
        raise Http404("No such page.")
    nodes = Node.objects.select_related("cluster").order_by("cluster__name", "name")
    return render(request, "telemetry/node_list.html", {"nodes": nodes})


@login_required
def node_detail(request, node_id: int):
    node = get_node(request.user, node_id)
    # What the page opens with, in the numbers that decide it (recorder.stored, the collector's flushes).
    shows = {"history_minutes": NODE_HISTORY_SECONDS // 60, "unstored_seconds": round(settings.TELEMETRY_FLUSH_SECONDS)}
    return render(request, "telemetry/node_detail.html", {"node": node, **shows})
