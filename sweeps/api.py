"""POST/GET /api/v1/sweeps/ (+ detail, cancel): the same checks and refusals as the launch form, the same access as
the pages (sweeps/access.py)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from core.api_schema import ErrorSerializer
from jobs import access as job_access
from jobs.api import ANY_SEGMENT, JobViewSet

from . import access
from .cancellation import CancelRefused, request_cancel
from .launch import LaunchInvalid, SweepInvalid, launch_sweep
from .progress import with_runs
from .serializers import SweepCreateSerializer, SweepSerializer


class SweepViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    serializer_class = SweepSerializer
    lookup_value_regex = ANY_SEGMENT

    def get_queryset(self):
        sweeps = access.visible_sweeps(self.request.user).select_related("template", "cluster", "course", "owner")
        return with_runs(sweeps)

    def get_object(self):
        return access.get_sweep(self.request.user, self.kwargs["pk"])

    @extend_schema(
        request=SweepCreateSerializer,
        responses={201: SweepSerializer, 403: ErrorSerializer},
        description=(
            "Launch a sweep: one run per combination (grid) or per position (zip) of the swept values, submitted as "
            "one SLURM job array. 400 names each parameter at fault; 403 says why it cannot run now — not enrolled, "
            "out of term, or larger than your GPU-hour budget (saying how many runs fit) — before anything is "
            "submitted."
        ),
    )
    def create(self, request, *args, **kwargs):
        data = SweepCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        given = data.validated_data
        template = job_access.visible_templates(request.user).filter(slug=given["template"]).first()
        if template is None:
            raise ValidationError({"template": ["No template with this slug is available to you."]})
        cluster = job_access.visible_clusters(request.user).filter(name=given["cluster"]).first()
        if cluster is None:
            raise ValidationError({"cluster": ["No cluster with this name is available to you."]})
        course = JobViewSet()._course_for(request.user, template, cluster, given.get("course"))
        try:
            sweep = launch_sweep(
                request.user,
                course=course,
                template=template,
                cluster=cluster,
                raw_params=given["params"],
                swept=given["swept"],
                mode=given["mode"],
                at_once=given.get("max_concurrent"),
            )
        except LaunchInvalid as exc:
            raise ValidationError({"params": {name: [message] for name, message in exc.errors.items()}}) from None
        except SweepInvalid as exc:
            raise ValidationError({"swept": {name: [message] for name, message in exc.errors.items()}}) from None
        except job_access.LaunchRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        return Response(SweepSerializer(sweep, context={"request": request}).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={202: SweepSerializer, 409: ErrorSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Cancel every unfinished run: one scancel of the array."""
        sweep = self.get_object()
        try:
            message = request_cancel(request.user, sweep)
        except CancelRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        body = {**SweepSerializer(sweep, context={"request": request}).data, "detail": message}
        return Response(body, status=status.HTTP_202_ACCEPTED)
