"""Telemetry pages: the instructor's class dashboard and report, and the admins' node pages.

The live parts arrive over the WebSocket (telemetry/consumers.py); these views render what the database knows.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from core import csv_cells
from core.choices import ACTIVE_STATES, JobState
from jobs import access
from jobs.course_queue import course_queues
from jobs.models import Job

from .access import get_node
from .class_hour import class_hour
from .models import Node
from .recorder import NODE_HISTORY_SECONDS
from .students import CSV_COLUMNS, STUCK_AFTER, StudentRow, class_rows
from .summary import REPORT_COLUMNS, course_report

STUDENT_COLUMNS = ["Student", "Status", "Running", "Waiting", "Jobs", "Failed", "GPU-hours", "Mean GPU utilization"]
STUDENT_COLUMNS += ["Last activity", "Idle"]
ENDED_LABELS_FOR = timedelta(hours=1)  # the heatmap's heat can name a job that ended (kept five minutes)


@login_required
def course_dashboard(request, slug: str):
    course = access.get_course(request.user, slug, teach=True)
    counts = dict(Job.objects.filter(course=course).values_list("state").annotate(n=Count("pk")).order_by())
    states = [(state.label, state.value, counts.get(state.value, 0)) for state in JobState]
    students = class_rows(course)
    return render(
        request,
        "telemetry/course_dashboard.html",
        {
            "course": course,
            "manages": access.may_manage(request.user, course),
            "states": states,
            "students": students,
            "heatmap": _heatmap_labels(course, students),
            "ended": _ended_recently(course),
            "hour": class_hour(course),
            "flush_seconds": round(settings.TELEMETRY_FLUSH_SECONDS),
            "student_filters": _filter_counts(students),
            "student_columns": STUDENT_COLUMNS,
            "stuck_minutes": int(STUCK_AFTER.total_seconds() // 60),
            "running": counts.get(JobState.RUNNING, 0),
            "idle_seconds": int(settings.TELEMETRY_IDLE_SECONDS),
            "idle_minutes": round(settings.TELEMETRY_IDLE_SECONDS / 60, 1),
            "course_queues": course_queues(course, timezone.now()),
        },
    )


@login_required
def course_dashboard_hour(request, slug: str):
    """The last hour's rows again, for the dashboard to redraw each minute (telemetry/class_hour.py)."""
    course = access.get_course(request.user, slug, teach=True)
    return JsonResponse(class_hour(course), headers={"Cache-Control": "no-store"})


def _ended_recently(course) -> list[Job]:
    """The course's jobs that ended in the last hour, newest first: what the live heatmap no longer shows."""
    since = timezone.now() - ENDED_LABELS_FOR
    jobs = Job.objects.filter(course=course, finished_at__gte=since).select_related("owner", "template")
    fields = ("pk", "state", "finished_at", "owner__username", "owner__first_name", "owner__last_name")
    return list(jobs.only(*fields, "template__name").order_by("-finished_at")[:50])


def _filter_counts(students: list[StudentRow]) -> list[tuple[str, str, int | None]]:
    """The student table's filter buttons: (value, words, how many students now); idle is counted by the page."""
    counted = [(flag, sum(flag in s.flags for s in students)) for flag in ("stuck", "waiting", "failed")]
    return [("", "Everyone", len(students)), *((f, f.capitalize(), n) for f, n in counted), ("idle", "Idle", None)]


def _heatmap_labels(course, students: list[StudentRow]) -> dict:
    """What the heatmap's frames do not carry: students' names, and which template each job runs: the unfinished
    jobs and those that ended in the last hour, whose frames the ring still replays to a page opened after they ended.

    Frames name a student by username and a job by id; a job that starts after the page opened reads "job 3f2a…".
    """
    recent = Q(state__in=ACTIVE_STATES) | Q(finished_at__gte=timezone.now() - ENDED_LABELS_FOR)
    jobs = Job.objects.filter(recent, course=course).values_list("pk", "template__slug")
    return {
        "names": {s.username: s.name for s in students},
        "jobs": {str(pk): f"{template} {str(pk)[:8]}" for pk, template in jobs},
    }


@login_required
def course_report_csv(request, slug: str):
    course = access.get_course(request.user, slug, teach=True)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{course.slug}-gpu-report.csv"'
    writer = csv_cells.writer(response)
    writer.writerow(REPORT_COLUMNS)
    writer.writerows(course_report(course))
    return response


@login_required
def course_students_csv(request, slug: str):
    """One row per enrolled student (report.csv has one per job): jobs, how they ended, GPU-hours, last activity."""
    course = access.get_course(request.user, slug, teach=True)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{course.slug}-students.csv"'
    writer = csv_cells.writer(response)
    writer.writerow(CSV_COLUMNS)
    writer.writerows(row.csv_row() for row in class_rows(course))
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
