from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .models import Sweep, SweepMode
from .plan import MAX_RUNS, MAX_SWEPT
from .progress import progress, runs_of


class SweepCreateSerializer(serializers.Serializer):
    template = serializers.SlugField(help_text="The template's slug.")
    cluster = serializers.SlugField(help_text="The cluster's name (a SLURM cluster reached over SSH).")
    course = serializers.SlugField(required=False, help_text="Needed only when the pair is in several of your courses.")
    params = serializers.DictField(
        required=False, default=dict, help_text="Values every run shares; defaults fill the rest."
    )
    swept = serializers.DictField(
        child=serializers.ListField(child=serializers.JSONField(), min_length=1, max_length=MAX_RUNS),
        help_text=f"Up to {MAX_SWEPT} sweepable parameters, each with its list of values.",
    )
    mode = serializers.ChoiceField(choices=SweepMode.choices, default=SweepMode.GRID)
    max_concurrent = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_RUNS,
        help_text="At most this many runs at once (limits may lower it).",
    )


class SweepRunSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    task = serializers.IntegerField(source="task_index")
    state = serializers.CharField()
    scheduler_id = serializers.CharField()
    params = serializers.DictField()
    exit_code = serializers.IntegerField(allow_null=True)


class SweepProgressSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    running = serializers.IntegerField()
    waiting = serializers.IntegerField()
    completed = serializers.IntegerField()


class SweepSerializer(serializers.ModelSerializer):
    template: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    cluster: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)
    course: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    owner: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="username", read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:sweep-detail")
    runs = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    class Meta:
        model = Sweep
        fields = [
            "id",
            "url",
            "owner",
            "course",
            "template",
            "cluster",
            "mode",
            "swept",
            "base_params",
            "max_concurrent",
            "submission",
            "state",
            "scheduler_id",
            "error",
            "created_at",
            "ended_at",
            "progress",
            "runs",
        ]
        read_only_fields = fields

    def _jobs(self, sweep):
        if not hasattr(sweep, "_run_jobs"):
            sweep._run_jobs = runs_of(sweep)
        return sweep._run_jobs

    @extend_schema_field(SweepRunSerializer(many=True))
    def get_runs(self, sweep) -> list[dict]:
        return list(SweepRunSerializer(self._jobs(sweep), many=True).data)

    @extend_schema_field(SweepProgressSerializer)
    def get_progress(self, sweep) -> dict:
        return dict(SweepProgressSerializer(progress(self._jobs(sweep))).data)
