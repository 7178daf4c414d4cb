"""REST API v1 for labs: /api/v1/courses/<slug>/labs/ (the course's labs; POST a lab file to import one),
…/<lab>/ (its sections and steps), …/<lab>/file/ (the lab as a lab file, for its instructors), …/<lab>/progress/
(the caller's own progress) and …/<lab>/progress/class/ (every student's: the course's teachers).

Same access as the pages (labs/access.py): a course the caller does not belong to, or a lab of another course, is
404; the class's progress is 404 for a student, as the grid is; importing and the lab file are the editor's (a TA
403). A lab is written step by step on the pages; the API reads it, and imports a whole lab file, checked as the
editor's Import checks it (labs/loading.py). A choice answer's correct choice is shown to the course's teachers only."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from courses.access import get_course

from . import access, grid, lab_files
from .lab_files import LabFileSerializer
from .loading import LabFileInvalid, import_lab
from .models import Lab, Section, Step
from .progress import student_progress


class StepSerializer(serializers.ModelSerializer):
    template: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    check = serializers.JSONField(source="check_spec", read_only=True, help_text="When the step is done, as data.")

    class Meta:
        model = Step
        fields = ["id", "position", "title", "instructions", "template", "preset", "fixed", "check", "quick_fixes"]
        read_only_fields = fields

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if not self.context.get("teaches") and isinstance(data.get("check"), dict):
            data["check"] = {key: value for key, value in data["check"].items() if key != "correct"}
        return data


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


class LabFileProblemsSerializer(serializers.Serializer):
    detail = serializers.CharField()
    problems = serializers.ListField(child=serializers.CharField(), help_text="Each problem, led by where it is.")


class CourseLabs(APIView):
    @extend_schema(responses=LabSerializer(many=True), operation_id="labs_list")
    def get(self, request, slug: str):
        return Response(LabSerializer(get_course(request.user, slug).labs.all(), many=True).data)

    @extend_schema(
        request=LabFileSerializer,
        responses={201: LabDetailSerializer, 400: LabFileProblemsSerializer},
        operation_id="labs_import",
    )
    def post(self, request, slug: str):
        """Import a lab file (the built-in labs' shape, as JSON) into the course as a new lab, under its slug or the
        next free one. Its templates must be the course's own or built-in ones; nothing is written unless all of it
        passes."""
        course = access.get_managed_course(request.user, slug, access.EDIT_LABS, write=True)
        try:
            lab = import_lab(course, request.data)
        except LabFileInvalid as refused:
            said = {"detail": "Nothing was imported: fix the lab file.", "problems": refused.problems}
            return Response(said, status=status.HTTP_400_BAD_REQUEST)
        return Response(LabDetailSerializer(lab, context={"teaches": True}).data, status=status.HTTP_201_CREATED)


class CourseLab(APIView):
    @extend_schema(responses=LabDetailSerializer, operation_id="labs_read")
    def get(self, request, slug: str, lab_slug: str):
        lab = access.get_lab(request.user, slug, lab_slug)
        teaches = access.may_teach(request.user, lab.course)
        return Response(LabDetailSerializer(lab, context={"teaches": teaches}).data)


class CourseLabFile(APIView):
    @extend_schema(responses=LabFileSerializer, operation_id="labs_file")
    def get(self, request, slug: str, lab_slug: str):
        """The lab as a lab file (what the editor's Export writes as YAML), for the course's instructors."""
        lab = access.get_editable_lab(request.user, slug, lab_slug)
        return Response(lab_files.definition_of(lab))


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
