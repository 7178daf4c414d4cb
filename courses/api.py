"""REST API v1 for lab sessions: /api/v1/courses/<slug>/lab-sessions/ (list, book) and …/<id>/ (read, cancel).

Same access rules and the same booking rules as the page (courses/access.py, courses/lab_sessions.py): a course the
user does not teach is 404, one they teach as a TA 403, a refused booking is 400 with the reason per field.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from . import access, lab_sessions
from .models import LabSession


class LabSessionSerializer(serializers.ModelSerializer):
    cluster: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)
    reservation = serializers.CharField(source="reservation_name", read_only=True)

    class Meta:
        model = LabSession
        fields = ["id", "cluster", "starts_at", "ends_at", "gpus", "gpus_held", "nodes", "state", "message"]
        fields += ["reservation"]
        read_only_fields = fields


class LabSessionBookSerializer(serializers.Serializer):
    cluster = serializers.SlugField(max_length=50, help_text="The cluster's name (GET /api/v1/clusters/).")
    starts_at = serializers.DateTimeField()
    minutes = serializers.IntegerField(min_value=1, max_value=100_000)
    gpus = serializers.IntegerField(min_value=1, max_value=10_000)

    def booking(self, course) -> lab_sessions.Booking:
        data = self.validated_data
        cluster = course.clusters.filter(name=data["cluster"]).first()
        if cluster is None:
            raise serializers.ValidationError({"cluster": "Not one of the course's clusters."})
        return lab_sessions.Booking(cluster, data["starts_at"], data["minutes"], data["gpus"])


class CourseLabSessions(APIView):
    @extend_schema(responses=LabSessionSerializer(many=True), operation_id="lab_sessions_list")
    def get(self, request, slug: str):
        course = access.get_managed_course(request.user, slug, access.LAB_SESSIONS)
        sessions = course.lab_sessions.select_related("cluster", "course").order_by("-starts_at")[:200]
        return Response(LabSessionSerializer(sessions, many=True).data)

    @extend_schema(
        request=LabSessionBookSerializer, responses={201: LabSessionSerializer}, operation_id="lab_sessions_book"
    )
    def post(self, request, slug: str):
        course = access.get_managed_course(request.user, slug, access.LAB_SESSIONS, write=True)
        given = LabSessionBookSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        try:
            session = lab_sessions.book(course, given.booking(course), actor=request.user)
        except lab_sessions.BookingRefused as refused:
            return Response(refused.errors, status=status.HTTP_400_BAD_REQUEST)
        return Response(LabSessionSerializer(session).data, status=status.HTTP_201_CREATED)


class CourseLabSession(APIView):
    @extend_schema(responses=LabSessionSerializer, operation_id="lab_sessions_read")
    def get(self, request, slug: str, session_id: int):
        return Response(LabSessionSerializer(access.get_lab_session(request.user, slug, session_id)).data)

    @extend_schema(request=None, responses=LabSessionSerializer, operation_id="lab_sessions_cancel")
    def delete(self, request, slug: str, session_id: int):
        """Cancel the session; the workers give its GPUs back on the cluster."""
        session = access.get_lab_session(request.user, slug, session_id, write=True)
        if not lab_sessions.cancel(session, actor=request.user):
            return Response({"detail": "That session had already ended or been cancelled."}, status.HTTP_409_CONFLICT)
        session.refresh_from_db()
        return Response(LabSessionSerializer(session).data)


class RosterEntrySerializer(serializers.Serializer):
    username = serializers.CharField(source="user.username")
    name = serializers.SerializerMethodField()
    email = serializers.EmailField(source="user.email")
    role = serializers.CharField()
    signed_in = serializers.SerializerMethodField(help_text="False until the person has signed in once.")
    cluster_username = serializers.SerializerMethodField(help_text="The person's user on the clusters, or empty.")

    def get_cluster_username(self, enrollment) -> str:
        identity = getattr(enrollment.user, "cluster_identity", None)
        return identity.username if identity is not None else ""

    def get_name(self, enrollment) -> str:
        return enrollment.user.get_full_name() or enrollment.user.username

    def get_signed_in(self, enrollment) -> bool:
        return enrollment.user.last_login is not None


class CourseRoster(APIView):
    @extend_schema(
        responses=RosterEntrySerializer(many=True),
        operation_id="course_roster",
        description="The course's people, by username. Its instructors only: a TA gets 403 in words, anyone else 404.",
    )
    def get(self, request, slug: str):
        course = access.get_roster_course(request.user, slug)
        enrollments = course.enrollments.select_related("user", "user__cluster_identity").order_by("user__username")
        return Response(RosterEntrySerializer(enrollments, many=True).data)
