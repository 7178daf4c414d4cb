"""REST API v1. Same access rules as the pages: everything goes through jobs.access."""

import re

from django.db.models import Case, CharField, IntegerField, Q, Value, When
from django.db.models.functions import Cast, Replace
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from clusters.backends import BackendError
from clusters.backends.kind import ActionRefused
from core.api_schema import ErrorSerializer
from core.choices import JobState
from courses.models import Course
from jobs import access

from . import servers
from .cancellation import CancelRefused, request_cancel
from .launch import LaunchInvalid, launch
from .logs import log_streams, parse_offset, read_log
from .models import JobTemplate
from .serializers import (
    CloneSerializer,
    ClusterSerializer,
    JobCreateSerializer,
    JobSerializer,
    LogSerializer,
    ScaleSerializer,
    TemplateSerializer,
)

# Any path segment reaches the view, so an id that cannot exist is the API's JSON 404, not the HTML page's.
ANY_SEGMENT = "[^/]+"
MINE = {"1": True, "true": True, "0": False, "false": False}
ID_PREFIX = re.compile(r"[0-9a-f]{1,32}")


@extend_schema_view(
    list=extend_schema(
        parameters=[OpenApiParameter("course", str, description="Only the templates of the course with this slug.")]
    )
)
class TemplateViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = TemplateSerializer
    lookup_field = "slug"
    lookup_value_regex = ANY_SEGMENT

    def get_queryset(self):
        """What the catalog offers and may be launched now: nothing unpublished, of another course, of a course
        out of its term, or that no cluster of the course runs. In the catalog's order: course by course, each in
        the order its instructors set."""
        order = list(self._offered())
        if not order:
            return JobTemplate.objects.none()
        place = Case(*(When(pk=pk, then=Value(i)) for i, pk in enumerate(order)), output_field=IntegerField())
        return JobTemplate.objects.filter(pk__in=order).order_by(place)

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "offered": self._offered()}

    def _offered(self) -> dict[int, list[str]]:
        """{template id: the slugs of the user's courses it may be launched in now}."""
        if not hasattr(self, "offered"):
            self.offered: dict[int, list[str]] = {}
            only = self.request.query_params.get("course") if self.action == "list" else None
            for course in access.template_catalog(self.request.user):
                if only is not None and course.slug != only:
                    continue
                for template in course.launchable if course.launch_refusal is None else ():
                    self.offered.setdefault(template.pk, []).append(course.slug)
        return self.offered


class ClusterViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ClusterSerializer
    lookup_field = "name"
    lookup_value_regex = ANY_SEGMENT

    def get_queryset(self):
        return access.visible_clusters(self.request.user).order_by("name")


def _refused(message: str) -> Response:
    return Response({"detail": message}, status=status.HTTP_403_FORBIDDEN)


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("state", str, enum=JobState.values, description="Only jobs in this state."),
            OpenApiParameter("course", str, description="Only jobs of the course with this slug."),
            OpenApiParameter("mine", str, enum=[*MINE], description="1 or true: only your own jobs (instructors)."),
            OpenApiParameter(
                "id_prefix", str, description="Only jobs whose id starts with these characters (dashes ignored)."
            ),
        ]
    )
)
class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    serializer_class = JobSerializer
    lookup_value_regex = ANY_SEGMENT

    def get_queryset(self):
        jobs = access.visible_jobs(self.request.user).select_related("template", "cluster", "course", "owner", "wait")
        state = self.request.query_params.get("state")
        if state is not None:
            if state not in JobState.values:
                raise ValidationError({"state": [f"Unknown state; one of {', '.join(JobState.values)}."]})
            jobs = jobs.filter(state=state)
        if self.request.query_params.get("course"):
            jobs = jobs.filter(course__slug=self.request.query_params["course"])
        prefix = self.request.query_params.get("id_prefix")
        if prefix is not None:  # a job named by the first characters of its id, as the pages show it
            digits = prefix.strip().lower().replace("-", "")
            if not ID_PREFIX.fullmatch(digits):
                raise ValidationError({"id_prefix": ["The first characters of a job's id: 0-9 and a-f, at most 32."]})
            jobs = jobs.annotate(id_digits=Replace(Cast("id", CharField()), Value("-"), Value(""))).filter(
                id_digits__startswith=digits
            )
        mine = self.request.query_params.get("mine", "0")
        if mine not in MINE:
            raise ValidationError({"mine": [f"One of {', '.join(MINE)}."]})
        if MINE[mine]:
            jobs = jobs.filter(owner_id=self.request.user.pk)
        return jobs.order_by("-created_at")

    def get_object(self):
        return access.get_job(self.request.user, self.kwargs["pk"])

    @extend_schema(request=JobCreateSerializer, responses={201: JobSerializer})
    def create(self, request, *args, **kwargs):
        data = JobCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        template = access.visible_templates(request.user).filter(slug=data.validated_data["template"]).first()
        if template is None:
            raise ValidationError({"template": ["No template with this slug is available to you."]})
        cluster = access.visible_clusters(request.user).filter(name=data.validated_data["cluster"]).first()
        if cluster is None:
            raise ValidationError({"cluster": ["No cluster with this name is available to you."]})
        course = self._course_for(request.user, template, cluster, data.validated_data.get("course"))
        return self._launch(request, course, template, cluster, data.validated_data["params"])

    def _course_for(self, user, template: JobTemplate, cluster, slug: str | None) -> Course:
        if slug:
            try:
                return access.get_course(user, slug)
            except Http404:
                raise ValidationError({"course": ["You are not in a course with this slug."]}) from None
        candidates = list(access.courses_for(user).filter(Q(templates=template) & Q(clusters=cluster)).distinct()[:2])
        if len(candidates) == 1:
            return candidates[0]
        if candidates:
            raise ValidationError({"course": ["This template and cluster are in several of your courses; name one."]})
        first = access.courses_for(user).first()
        if first is None:
            raise ValidationError({"course": ["You are not enrolled in any course."]})
        return first  # check_launch then says precisely what is missing

    def _launch(self, request, course, template, cluster, params, source=None) -> Response:
        try:
            job = launch(
                request.user, course=course, template=template, cluster=cluster, raw_params=params, cloned_from=source
            )
        except LaunchInvalid as exc:
            raise ValidationError({"params": {name: [message] for name, message in exc.errors.items()}}) from None
        except access.LaunchRefused as exc:
            return _refused(str(exc))
        body = JobSerializer(job, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={202: JobSerializer, 409: ErrorSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        job = self.get_object()
        try:
            message = request_cancel(request.user, job)
        except CancelRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        job.refresh_from_db()
        body = {**JobSerializer(job, context={"request": request}).data, "detail": message}
        return Response(body, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=CloneSerializer, responses={201: JobSerializer})
    @action(detail=True, methods=["post"])
    def clone(self, request, pk=None):
        source = self.get_object()
        data = CloneSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        cluster = source.cluster
        if data.validated_data.get("cluster"):
            cluster = access.visible_clusters(request.user).filter(name=data.validated_data["cluster"]).first()
            if cluster is None:
                raise ValidationError({"cluster": ["No cluster with this name is available to you."]})
        params = {**source.params, **data.validated_data["params"]}
        return self._launch(request, source.course, source.template, cluster, params, source=source)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "offset",
                {"type": "integer", "minimum": 0},
                description="Byte offset to read from (0 = the start). Past the end of the log, the answer has no "
                "data and `offset` is the log's current size: read on from there.",
            ),
            OpenApiParameter("stream", str, description="Kubernetes: which pod/container (see streams/)."),
        ],
        responses={200: LogSerializer, 503: ErrorSerializer},
    )
    @action(detail=True, methods=["get"])
    def log(self, request, pk=None):
        job = self.get_object()
        try:
            offset = parse_offset(request.query_params.get("offset", "0"))
        except ValueError as exc:
            raise ValidationError({"offset": [str(exc)]}) from None
        try:
            chunk = read_log(job, offset, request.query_params.get("stream", ""))
        except BackendError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        # done: the job has ended and its whole log has been read; nothing more will come.
        return Response(
            {"offset": chunk.offset, "data": chunk.data, "eof": chunk.eof, "done": job.is_terminal and chunk.eof}
        )

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 503: ErrorSerializer})
    @action(detail=True, methods=["get"])
    def streams(self, request, pk=None):
        """The job's separate logs (Kubernetes: one per pod and container), for ?stream= on the log."""
        job = self.get_object()
        try:
            return Response({"streams": log_streams(job)})
        except BackendError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)

    @extend_schema(request=ScaleSerializer, responses={200: JobSerializer, 409: ErrorSerializer, 503: ErrorSerializer})
    @action(detail=True, methods=["post"])
    def scale(self, request, pk=None):
        job = access.get_job(request.user, pk, act=True)
        data = ScaleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            message = servers.scale(request.user, job, data.validated_data["replicas"])
        except ActionRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except BackendError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        job.refresh_from_db()
        return Response({**JobSerializer(job, context={"request": request}).data, "detail": message})
