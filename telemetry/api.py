"""REST API v1 for the class dashboard: /api/v1/courses/<slug>/dashboard/ (what the page's tables show).

The page's access rule (telemetry/views.course_dashboard): the course's instructors and TAs; anyone else 404.
"""

from django.db.models import Count
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core.choices import JobState
from courses import access
from jobs.models import Job

from .students import class_rows

STUDENT_FIELDS = ("username", "name", "jobs", "completed", "failed", "cancelled", "running", "waiting", "stuck")


class StudentSerializer(serializers.Serializer):
    username = serializers.CharField()
    name = serializers.CharField()
    jobs = serializers.IntegerField()
    completed = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    running = serializers.IntegerField()
    waiting = serializers.IntegerField()
    stuck = serializers.IntegerField(help_text="Waiting too long, or told by the scheduler it will never start.")
    gpu_hours = serializers.FloatField()
    mean_gpu_util = serializers.FloatField(allow_null=True, help_text="%, over measured GPUs; null when none.")
    last_state = serializers.CharField(help_text="The state of the student's newest job; empty with none.")
    flags = serializers.ListField(child=serializers.CharField(), help_text="stuck, waiting, failed.")


class CourseDashboard(APIView):
    @extend_schema(
        operation_id="course_dashboard",
        responses=inline_serializer(
            "CourseDashboard",
            {
                "course": serializers.CharField(),
                "states": serializers.DictField(child=serializers.IntegerField(), help_text="Jobs per state."),
                "students": StudentSerializer(many=True),
            },
        ),
        description="The class dashboard's tables: jobs per state and each student's row. Instructors and TAs.",
    )
    def get(self, request, slug: str):
        course = access.get_course(request.user, slug, teach=True)
        counts = dict(Job.objects.filter(course=course).values_list("state").annotate(n=Count("pk")).order_by())
        students = [
            {
                **{name: getattr(row, name) for name in STUDENT_FIELDS},
                "gpu_hours": round(row.gpu_hours, 3),
                "mean_gpu_util": None if row.mean_util is None else round(row.mean_util, 1),
                "last_state": row.last_state,
                "flags": row.flags,
            }
            for row in class_rows(course)
        ]
        states = {state.value: counts.get(state.value, 0) for state in JobState}
        return Response({"course": course.slug, "states": states, "students": students})
