from __future__ import annotations

import uuid
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.urls import reverse

from clusters import kinds
from core.choices import ACTIVE_STATES, TERMINAL_STATES, EndpointAPI, EventKind, JobState, SessionKind
from core.figures import percent_under
from core.templating.params import Param, parse_schema

if TYPE_CHECKING:
    from courses.models import Course


class TemplateContent(models.Model):
    """What a template is to the students who launch it: its text, parameters and limits. JobTemplate holds the
    version students see; a TemplateDraft the instructor's changes to a published template, until they publish
    them."""

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, help_text="What the job does and what students should look for.")
    backend = models.CharField(max_length=16, choices=kinds.template_choices, default=kinds.default_templates)
    body = models.TextField(help_text="The script after the portal's #SBATCH header; {{ name }} inserts a parameter.")
    parameters = models.JSONField(default=list, blank=True, help_text="The typed parameter schema (a JSON list).")
    endpoint_api = models.CharField(
        "Try it API",
        max_length=16,
        choices=EndpointAPI.choices,
        blank=True,
        help_text="Kubernetes servers: the API the job page's prompt box speaks.",
    )
    max_gpus = models.PositiveIntegerField("max GPUs per job", default=8)
    max_nodes = models.PositiveIntegerField("max nodes per job", default=2)
    max_minutes = models.PositiveIntegerField("max time limit (minutes)", default=120)

    class Meta:
        abstract = True

    def schema(self) -> list[Param]:
        return parse_schema(self.parameters)

    def content(self) -> dict:
        return {field: getattr(self, field) for field in CONTENT_FIELDS}


CONTENT_FIELDS = (
    "name",
    "description",
    "backend",
    "body",
    "parameters",
    "endpoint_api",
    "max_gpus",
    "max_nodes",
    "max_minutes",
)


class JobTemplate(TemplateContent):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        PUBLISHED = "published", "Published"
        ARCHIVED = "archived", "Archived"

    slug = models.SlugField(unique=True)
    courses: models.ManyToManyField[Course, CourseTemplate] = models.ManyToManyField(
        "courses.Course", blank=True, related_name="templates", through="CourseTemplate"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    published_at = models.DateTimeField(
        null=True, blank=True, help_text="When the version students see (this row's content) was published."
    )
    session = models.CharField(
        "interactive session",
        max_length=16,
        choices=SessionKind.choices,
        blank=True,
        help_text="JupyterLab: the job page opens the server the job starts, through the portal (sessions app).",
    )
    builtin = models.BooleanField(default=False, editable=False, help_text="Shipped with the portal.")
    copied_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="copies",
        help_text="The template this one started as a copy of: a built-in one, or the course's last term's.",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def requirement(self) -> str:
        """What the template is where only some clusters of its kind run it, in words ("" where every one does)."""
        return kinds.kind_of(self.backend).template_requirement(self.body)


class CourseTemplate(models.Model):
    """A template offered in a course, at its place in the course's catalog: the order the instructor sets on the
    course's templates page, which the students' catalog and the API follow (jobs/template_order.py)."""

    course = models.ForeignKey("courses.Course", on_delete=models.CASCADE, related_name="template_placements")
    template = models.ForeignKey(JobTemplate, on_delete=models.CASCADE, related_name="placements")
    position = models.PositiveIntegerField(
        null=True, blank=True, help_text="Its place in the course's catalog, from 0; empty: after the others."
    )

    class Meta:
        ordering = [models.F("position").asc(nulls_last=True), "pk"]  # a new template goes last
        constraints = [models.UniqueConstraint(fields=["course", "template"], name="course_template_once")]
        verbose_name = "template of a course"

    def __str__(self) -> str:
        return f"{self.template_id} in {self.course_id} at {self.position}"


class TemplateDraft(TemplateContent):
    """Unpublished changes to a published template. Students go on launching the published version (the template's
    own fields) until the instructor publishes these, which copies them onto the template, or discards them."""

    template = models.OneToOneField(JobTemplate, on_delete=models.CASCADE, primary_key=True, related_name="draft")
    saved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    saved_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"unpublished changes to {self.template_id}"


class JobQuerySet(models.QuerySet["Job"]):
    def for_table(self) -> JobQuerySet:
        """Newest first, with what a row of a job table (jobs/_job_rows.html) shows in the same query: the
        owner's, template's and cluster's names, a pending job's place in its queue, its values and the template's
        labels for them, and the results telemetry stored when it ended (its summary, joined by name: jobs does
        not import telemetry). The long texts a row never reads stay in the database."""
        return (
            self.select_related("template", "cluster", "owner", "wait", "summary")
            .defer(
                "script",
                "error",
                "template__description",
                "template__body",
                "cluster__host_key",
                "cluster__preamble",
                "owner__password",
                "wait__factors",
                "wait__advice",
                "wait__suggested",
                "wait__note",
            )
            .order_by("-created_at")
        )


class Job(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="jobs")
    course = models.ForeignKey("courses.Course", on_delete=models.PROTECT, related_name="jobs")
    template = models.ForeignKey(JobTemplate, on_delete=models.PROTECT, related_name="jobs")
    cluster = models.ForeignKey("clusters.Cluster", on_delete=models.PROTECT, related_name="jobs")
    account = models.ForeignKey(
        "clusters.ClusterAccount",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="jobs",
        help_text="The cluster identity the job runs as.",
    )
    cloned_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="clones")
    params = models.JSONField(default=dict)
    script = models.TextField(help_text="The rendered script, exactly as submitted.")
    gpus = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    scheduler_id = models.CharField("scheduler id", max_length=128, blank=True)
    scheduler_state = models.CharField(max_length=32, blank=True, help_text="The scheduler's own word, e.g. PENDING.")
    scheduler_reason = models.CharField(max_length=255, blank=True, help_text="Why it waits, e.g. Resources.")
    exit_code = models.IntegerField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="What went wrong, in words for the student.")
    submit_attempts = models.PositiveIntegerField(default=0)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True, help_text="When the scheduler last reported the job.")
    # Pending for a reason the scheduler cannot clear by itself (see SchedulerStatus.never_starts): such a job no
    # longer counts against the quota and is cancelled after GPULAB_NEVER_STARTS_GRACE seconds.
    never_starts_since = models.DateTimeField(null=True, blank=True)
    never_starts_reason = models.CharField(
        max_length=255, blank=True, help_text="Why the scheduler will never start it."
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # An interactive session's secret (JupyterLab's token): made by the portal before the submit and handed to the
    # job outside anything Files serves (jobs/session_tokens.py); encrypted with the portal's credential keys.
    session_token_encrypted = models.TextField(editable=False, default="")
    # One task of a job array submitted for many runs at once (a sweep, sweeps/): the array's submission is the
    # sweep's, so this app's submit task leaves the job alone, and its end is told once for the whole sweep.
    in_array = models.BooleanField(default=False, editable=False)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["cluster", "state"], name="job_cluster_state"),
            models.Index(fields=["owner", "-created_at"], name="job_owner_created"),
            models.Index(fields=["course", "state"], name="job_course_state"),
            models.Index(fields=["course", "-created_at"], name="job_course_created"),  # the course job list
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "scheduler_id"],
                condition=~models.Q(scheduler_id=""),
                name="job_unique_scheduler_id_per_cluster",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.template.name} #{str(self.pk)[:8]}"

    def get_absolute_url(self) -> str:
        return reverse("jobs:detail", args=[self.pk])

    @property
    def short_id(self) -> str:
        return str(self.pk)[:8]

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def never_starts_cancel_at(self):
        """When the portal cancels a job the scheduler will never start (jobs/never_starts.py)."""
        if self.never_starts_since is None:
            return None
        return self.never_starts_since + timedelta(seconds=settings.GPULAB_NEVER_STARTS_GRACE)

    @property
    def can_cancel(self) -> bool:
        return self.is_active and self.cancel_requested_at is None


class JobEvent(models.Model):
    """The audit trail of a job: every launch, state move and cancel request, with who and why."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(auto_now_add=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    kind = models.CharField(max_length=16, choices=EventKind.choices)
    from_state = models.CharField(max_length=16, choices=JobState.choices, blank=True)
    to_state = models.CharField(max_length=16, choices=JobState.choices, blank=True)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "pk"]
        indexes = [models.Index(fields=["job", "at"], name="jobevent_job_at")]

    def __str__(self) -> str:
        return f"{self.job_id} {self.kind} {self.from_state}→{self.to_state}"


class JobUsage(models.Model):
    """What SLURM accounting recorded of a finished job (sacct); one row per job, on clusters with accounting only.

    Written once when the job ends (jobs/polling.py); the right-size report (jobs/rightsize.py) reads it with the
    telemetry summary. A job without this row ran where there is no accounting: the report leaves CPU and memory out.
    """

    job = models.OneToOneField(Job, on_delete=models.CASCADE, primary_key=True, related_name="accounted")
    elapsed_seconds = models.PositiveIntegerField(help_text="Elapsed: how long the job held its allocation.")
    cpu_seconds = models.FloatField("CPU seconds", help_text="TotalCPU: user + system time of every step.")
    cpus = models.PositiveIntegerField("CPU cores", help_text="AllocCPUS: the cores the job held.")
    gpus = models.PositiveIntegerField("GPUs", default=0, help_text="The gres/gpu TRES the job held.")
    max_rss_bytes = models.BigIntegerField("peak host memory (bytes)", null=True, blank=True, help_text="MaxRSS.")
    requested_memory_bytes = models.BigIntegerField("requested memory (bytes)", null=True, blank=True)
    time_limit_minutes = models.PositiveIntegerField(null=True, blank=True)
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "job usage (accounting)"
        verbose_name_plural = "job usage (accounting)"

    def __str__(self) -> str:
        return f"accounting of {self.job_id}"

    @property
    def cpu_efficiency(self) -> float | None:
        """TotalCPU / (elapsed x cores), as a percentage; None when the job held no time or no core."""
        if not self.elapsed_seconds or not self.cpus:
            return None
        return round(100 * self.cpu_seconds / (self.elapsed_seconds * self.cpus), 1)


class KeptLog(models.Model):
    """A finished job's output as the portal copied it (its first GPULAB_KEPT_LOG_BYTES), read once the cluster's own
    copy is gone (scratch cleaned) or the cluster cannot be reached; see jobs/kept_logs.py."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, primary_key=True, related_name="kept_log")
    data = models.TextField(blank=True)
    truncated = models.BooleanField(default=False, help_text="The log was longer than the portal keeps.")
    kept_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"log of {self.job_id}"


class IdleWarning(models.Model):
    """The course's idle rule applied to one running job (telemetry/idle_reaping.py): when it was warned, and when
    someone pressed "Keep it" (idle time then counts again from that moment)."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, primary_key=True, related_name="idle_warning")
    warned_at = models.DateTimeField(null=True, blank=True)
    idle_minutes = models.FloatField(default=0.0, help_text="How long its GPUs had been idle when warned.")
    max_util = models.FloatField(default=0.0, help_text="The highest GPU utilization (%) over that time.")
    kept_at = models.DateTimeField(null=True, blank=True)
    kept_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    def __str__(self) -> str:
        return f"idle warning of {self.job_id}"

    @property
    def active(self) -> bool:
        return self.warned_at is not None and (self.kept_at is None or self.kept_at < self.warned_at)

    @property
    def max_util_text(self) -> str:
        return percent_under(self.max_util)


class JobWait(models.Model):
    """Why a pending job waits, as its scheduler last said (jobs/waiting.py, rewritten once per poll cycle for every
    pending job of a cluster at once). The job page shows it with its age; it means nothing once the job has left
    pending, and the next cycle removes it."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, primary_key=True, related_name="wait")
    observed_at = models.DateTimeField(help_text="When the scheduler said this.")
    reason = models.CharField(max_length=255, blank=True, help_text="Why it waits, in words.")
    partition = models.CharField(max_length=64, blank=True)
    position = models.PositiveIntegerField(null=True, blank=True, help_text="1: the next to start in its partition.")
    pending_in_partition = models.PositiveIntegerField(null=True, blank=True)
    estimated_start = models.DateTimeField(null=True, blank=True, help_text="The scheduler's estimate (backfill).")
    priority = models.BigIntegerField(null=True, blank=True)
    factors = models.JSONField(default=list, blank=True, help_text="[[factor, weighted value], …], largest first.")
    advice = models.JSONField(default=list, blank=True, help_text="What would start it sooner, in sentences.")
    suggested = models.JSONField(default=dict, blank=True, help_text="Parameter values that would start it sooner.")
    note = models.CharField(max_length=255, blank=True, help_text="What this scheduler cannot tell.")
    estimate_learnt = models.BooleanField(
        "estimate learnt by the portal",
        default=False,
        help_text="The estimated start is the portal's, from how long the queue's earlier jobs waited (Kueue).",
    )

    def __str__(self) -> str:
        return f"wait of {self.job_id}"


class QueueStep(models.Model):
    """A step the cluster's queue took with a job (Kueue: a Workload condition that became true: quota reserved,
    admitted, pods ready, evicted, preempted, requeued, finished), kept once (jobs/queue_steps.py) so the timeline
    shows it and preemptions and requeues can be counted."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="queue_steps")
    condition = models.CharField(max_length=32, help_text="Kueue's condition type, e.g. Preempted.")
    reason = models.CharField(max_length=64, blank=True, help_text="Kueue's reason, e.g. InCohortReclamation.")
    at = models.DateTimeField(help_text="When the queue says it happened.")

    class Meta:
        ordering = ["at", "pk"]
        constraints = [models.UniqueConstraint(fields=["job", "condition", "at"], name="queue_step_once")]
        indexes = [models.Index(fields=["condition", "at"], name="queue_step_condition_at")]

    def __str__(self) -> str:
        return f"{self.job_id} {self.condition} {self.at:%Y-%m-%d %H:%M:%S}"


class LoadTestResult(models.Model):
    """The last load test of a server job whose report the portal read (jobs/servers.py: load_test_report), kept so
    that a comparison still shows its figures once the cluster's copy is gone: the load generator's pod lives an hour
    after it ends, and a finished server's namespace not at all. Numbers only, as REPORT_FIGURES names them."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, primary_key=True, related_name="load_test")
    name = models.CharField(max_length=128, help_text="The load generator's Kubernetes Job.")
    figures = models.JSONField(default=dict, blank=True, help_text="Its report's figures: requests/s, TTFT, TPOT…")
    read_at = models.DateTimeField("report read at", auto_now=True)

    class Meta:
        verbose_name = "load test result"

    def __str__(self) -> str:
        return f"load test {self.name} of {self.job_id}"
