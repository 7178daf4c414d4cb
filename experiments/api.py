"""GET /api/v1/compare/?jobs=<id>,<id>[&baseline=<id>]: a comparison's tables and downsampled series as JSON.

The same comparison as the page (comparison.py), under the same access: a run the caller may not see is left out and
counted in `note`; none visible is 404. Refusals (400) name the `jobs` field: an id that is not one, fewer than two,
more than sixty (selection.MAX_RUNS).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api_schema import ErrorSerializer, ValidationErrorSerializer

from .comparison import Comparison, compare_runs
from .selection import MAX_RUNS, CompareRefused, NothingVisible, parse_ids
from .views import NOTHING_VISIBLE


class CompareQuerySerializer(serializers.Serializer):
    jobs = serializers.CharField(
        required=False, allow_blank=True, default="", help_text=f"The runs' ids, separated by commas: 2 to {MAX_RUNS}."
    )
    baseline = serializers.CharField(
        required=False, help_text="The id of the run speed-ups are measured against; default the first run shown."
    )


class ResultsSerializer(serializers.Serializer):
    final_loss = serializers.FloatField(allow_null=True)
    lowest_loss = serializers.FloatField(allow_null=True)
    median_tok_s = serializers.FloatField(allow_null=True, help_text="The median of the run's logged tok/s.")
    tok_s_per_gpu = serializers.FloatField(allow_null=True)
    speedup = serializers.FloatField(allow_null=True, help_text="Median tok/s over the baseline run's.")
    scaling_efficiency = serializers.FloatField(
        allow_null=True, help_text="Where the GPUs differ from the baseline's: the speed-up per GPU ratio, in %."
    )
    wall_seconds = serializers.IntegerField(allow_null=True)
    gpu_hours = serializers.FloatField()
    mean_gpu_util = serializers.FloatField(allow_null=True, help_text="%")
    peak_gpu_memory_mib = serializers.FloatField(allow_null=True)
    simulated_gpus = serializers.BooleanField(help_text="The GPU figures came from a stand-in nvidia-smi.")
    verdict = serializers.CharField(help_text="The right-size report in a few words; empty before the run ends.")


class LoadTestSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The load generator's Kubernetes Job.")
    read_at = serializers.DateTimeField(help_text="When the portal read its report from the cluster.")
    requests_per_s = serializers.FloatField(allow_null=True, help_text="Requests answered per second.")
    ttft_p50_ms = serializers.FloatField(allow_null=True, help_text="Time to first token, median, ms.")
    ttft_p95_ms = serializers.FloatField(allow_null=True, help_text="Time to first token, 95th percentile, ms.")
    tpot_p50_ms = serializers.FloatField(allow_null=True, help_text="Time per output token after the first, median.")
    tpot_p95_ms = serializers.FloatField(allow_null=True, help_text="Time per output token, 95th percentile, ms.")
    prompts = serializers.IntegerField(allow_null=True)
    concurrency = serializers.IntegerField(allow_null=True, help_text="Requests in flight at once.")
    failed = serializers.IntegerField(allow_null=True)


class RunSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="job.pk")
    name = serializers.CharField(help_text="The run by what differs: its legend entry.")
    colour = serializers.CharField()
    url = serializers.CharField(source="job.get_absolute_url")
    template = serializers.CharField(source="job.template.name")
    student = serializers.CharField(source="job.owner.username")
    state = serializers.CharField(source="job.state")
    exit_code = serializers.IntegerField(source="job.exit_code", allow_null=True)
    gpus = serializers.IntegerField(source="job.gpus")
    results = ResultsSerializer()
    load_test = LoadTestSerializer(
        allow_null=True, help_text="A server's last load test the portal read; null for a run without one."
    )


class ParameterSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # the field, not Field.label
    values = serializers.ListField(child=serializers.CharField(), help_text="One per run, in the runs' order.")
    differs = serializers.BooleanField()


class ComparisonSerializer(serializers.Serializer):
    runs = RunSerializer(many=True)
    parameters = ParameterSerializer(many=True)
    baseline = serializers.UUIDField(source="baseline.job.pk")
    note = serializers.CharField(help_text="Runs left out (not yours to see, or deleted), in words; empty if none.")
    live = serializers.BooleanField(help_text="A run is still going: ask again for new points.")
    figures = serializers.DictField(
        child=serializers.JSONField(),
        help_text=(
            "Plotly figures by chart (loss, tokens, step-time, gpu-util, gpu-memory), without a legend of their own: "
            "a trace's uid is its run's place in `runs`, whose names and colours are the legend."
        ),
    )


def comparison_json(comparison: Comparison) -> dict:
    return ComparisonSerializer(comparison).data


class CompareView(APIView):
    @extend_schema(
        operation_id="compare",
        parameters=[CompareQuerySerializer],
        responses={
            200: ComparisonSerializer,
            400: OpenApiResponse(
                ValidationErrorSerializer, description=f"`jobs`: not ids, fewer than 2 or over {MAX_RUNS}."
            ),
            404: OpenApiResponse(ErrorSerializer, description="None of the runs may be shown to you."),
        },
    )
    def get(self, request):
        query = CompareQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        try:
            ids = parse_ids([query.validated_data["jobs"]])
        except CompareRefused as refused:
            return Response({"jobs": [str(refused)]}, status=status.HTTP_400_BAD_REQUEST)
        try:
            comparison = compare_runs(request.user, ids, query.validated_data.get("baseline"))
        except NothingVisible:
            return Response({"detail": NOTHING_VISIBLE}, status=status.HTTP_404_NOT_FOUND)
        return Response(comparison_json(comparison))
