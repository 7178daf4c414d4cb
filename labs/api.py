"""REST API v1 for labs: /api/v1/courses/<slug>/labs/ (the course's labs), …/<lab>/ (its sections and steps),
…/<lab>/progress/ (the caller's own progress) and …/<lab>/progress/class/ (every student's: the course's teachers).

Same access as the pages (labs/access.py): a course the caller does not belong to, or a lab of another course, is
404; the class's progress is 404 for a student, as the grid is."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from courses.access import get_course

from . import access, grid
from .models import Lab, Section, Step
from .progress import student_progress


class StepSerializer(serializers.ModelSerializer):
    template: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    check = serializers.JSONField(source="check_spec", read_only=True, help_text="When the step is done, as data.")

    class Meta:
        model = Step
        fields = ["id", "position", "title", "instructions", "template", "preset", "fixed", "check", "quick_fixes"]
        read_only_fields = fields


class SectionSerializer(serializers.ModelSerializer):
    steps = StepSerializer(many=True, read_only=True)

    class Meta:
        model = Section
        fields = ["position", "title", "planned_minutes", "steps"]
        read_only_fields = fields


class LabSerializer(serializers.ModelSerializer):
    class Meta:
        model = Lab
        fields = ["slug", "title", "summary", "builtin"]
        read_only_fields = fields


class LabDetailSerializer(LabSerializer):
    sections = SectionSerializer(many=True, read_only=True)

    class Meta(LabSerializer.Meta):
        fields = [*LabSerializer.Meta.fields, "sections"]
        read_only_fields = fields


class StepProgressSerializer(serializers.Serializer):
    step = serializers.IntegerField(source="step.pk")
    state = serializers.CharField(help_text="none, not_started, running, waiting, done or failed.")
    done_at = serializers.DateTimeField(allow_null=True)
    job = serializers.UUIDField(source="latest.pk", allow_null=True, default=None, help_text="The newest run.")
    evidence = serializers.UUIDField(source="evidence.pk", allow_null=True, default=None)
    figure = serializers.FloatField(allow_null=True, help_text="The value a figure check read.")
    why = serializers.CharField(help_text="Why a tried step is not done yet.")
    quick_fix = serializers.CharField()


class StudentProgressSerializer(serializers.Serializer):
    student = serializers.CharField(source="student.username")
    done = serializers.IntegerField()
    flags = serializers.ListField(child=serializers.CharField())
    steps = StepProgressSerializer(source="cells", many=True)


class CourseLabs(APIView):
    @extend_schema(responses=LabSerializer(many=True), operation_id="labs_list")
    def get(self, request, slug: str):
        return Response(LabSerializer(get_course(request.user, slug).labs.all(), many=True).data)


class CourseLab(APIView):
    @extend_schema(responses=LabDetailSerializer, operation_id="labs_read")
    def get(self, request, slug: str, lab_slug: str):
        lab = access.get_lab(request.user, slug, lab_slug)
        return Response(LabDetailSerializer(lab).data)


class MyLabProgress(APIView):
    @extend_schema(responses=StepProgressSerializer(many=True), operation_id="labs_progress_mine")
    def get(self, request, slug: str, lab_slug: str):
        """The caller's own progress, step by step."""
        lab = access.get_lab(request.user, slug, lab_slug)
        return Response(StepProgressSerializer(student_progress(lab, request.user), many=True).data)


class ClassLabProgress(APIView):
    @extend_schema(responses=StudentProgressSerializer(many=True), operation_id="labs_progress_class")
    def get(self, request, slug: str, lab_slug: str):
        """Every student's progress, the furthest behind first (the course's instructors and TAs; others 404)."""
        lab = access.get_lab(request.user, slug, lab_slug, teach=True)
        rows = grid.rows(lab, access.students_of(lab.course))
        return Response(StudentProgressSerializer(rows, many=True).data)
