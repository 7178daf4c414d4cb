from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from clusters.models import Cluster
from core.choices import JobState

from .models import Job, JobTemplate, JobWait
from .waiting import as_data


class TemplateSerializer(serializers.ModelSerializer):
    courses = serializers.SerializerMethodField(help_text="The slugs of your courses you may launch it in now.")

    def get_courses(self, template) -> list[str]:
        return self.context["offered"].get(template.pk, [])

    class Meta:
        model = JobTemplate
        fields = [
            "slug",
            "name",
            "description",
            "backend",
            "status",
            "parameters",
            "courses",
            "max_gpus",
            "max_nodes",
            "max_minutes",
        ]
        read_only_fields = fields


class ClusterSerializer(serializers.ModelSerializer):
    """What students may know of a cluster. Credentials are not model fields here and never will be."""

    class Meta:
        model = Cluster
        fields = ["name", "title", "kind", "enabled", "partitions", "gpu_types"]
        read_only_fields = fields


class WaitSerializer(serializers.Serializer):
    """Why a pending job waits (jobs/waiting.py), as its scheduler said `age_seconds` ago."""

    observed_at = serializers.DateTimeField()
    age_seconds = serializers.IntegerField()
    reason = serializers.CharField(help_text="Why it waits, in words.")
    partition = serializers.CharField()
    position = serializers.IntegerField(allow_null=True, help_text="1: the next to start in its partition.")
    pending_in_partition = serializers.IntegerField(allow_null=True)
    estimated_start = serializers.DateTimeField(allow_null=True, help_text="The scheduler's estimate, if it has one.")
    priority = serializers.IntegerField(allow_null=True)
    factors = serializers.DictField(child=serializers.IntegerField(), help_text="Weighted priority factors (sprio).")
    advice = serializers.ListField(child=serializers.CharField(), help_text="What would start it sooner.")
    suggested = serializers.DictField(
        child=serializers.IntegerField(), help_text="Parameter values that would start it sooner (clone with them)."
    )
    note = serializers.CharField(help_text="What this scheduler cannot tell.")
    estimate_learnt = serializers.BooleanField(
        help_text="The estimated start is the portal's, from the queue's earlier waits (Kueue), not the scheduler's."
    )


class JobSerializer(serializers.ModelSerializer):
    template: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    cluster: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)
    course: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    owner: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="username", read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:job-detail")
    wait = serializers.SerializerMethodField(help_text="A pending job: why it waits; null otherwise.")

    class Meta:
        model = Job
        fields = [
            "id",
            "url",
            "state",
            "template",
            "cluster",
            "course",
            "owner",
            "params",
            "gpus",
            "scheduler_id",
            "scheduler_state",
            "scheduler_reason",
            "never_starts_since",
            "never_starts_reason",
            "created_at",
            "submitted_at",
            "started_at",
            "finished_at",
            "exit_code",
            "error",
            "cloned_from",
            "cancel_requested_at",
            "wait",
        ]
        read_only_fields = fields

    @extend_schema_field(WaitSerializer(allow_null=True))
    def get_wait(self, job: Job) -> dict | None:
        if job.state != JobState.PENDING:
            return None
        try:
            return as_data(job.wait, timezone.now())
        except JobWait.DoesNotExist:
            return None


class JobCreateSerializer(serializers.Serializer):
    template = serializers.SlugField(help_text="The template's slug.")
    cluster = serializers.SlugField(help_text="The cluster's name.")
    course = serializers.SlugField(required=False, help_text="Needed only when the pair is in several of your courses.")
    params = serializers.DictField(required=False, default=dict, help_text="Parameter values; defaults fill the rest.")


class CloneSerializer(serializers.Serializer):
    cluster = serializers.SlugField(required=False)
    params = serializers.DictField(required=False, default=dict, help_text="Values that differ from the original.")


class ScaleSerializer(serializers.Serializer):
    replicas = serializers.IntegerField(min_value=0, max_value=8)


class LogSerializer(serializers.Serializer):
    offset = serializers.IntegerField(help_text="Where the next read starts; the log's size when read to its end.")
    # DRF's metaclass takes declared fields out of the class, so this field leaves Serializer.data alone
    data = serializers.CharField(allow_blank=True)  # type: ignore[assignment]
    eof = serializers.BooleanField(help_text="Nothing more to read right now.")
    done = serializers.BooleanField(help_text="The job has ended and its whole log has been read.")
