"""A sweep: one template's parameters expanded into runs, submitted together (one SLURM job array), or run by run
where an array cannot hold them (sweeps/release.py).

Each run is a Job like any other (its own page, log, curves, cancel, clone); `SweepRun` ties it to its sweep and its
task index. The link lives here, not on Job, because the jobs app stands below this one and never needs the sweep:
it only needs to know that a job's submission is not its own (`Job.in_array`).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse


class SweepMode(models.TextChoices):
    GRID = "grid", "Grid: every combination"
    ZIP = "zip", "Zip: the lists side by side"


class SweepSubmission(models.TextChoices):
    ARRAY = "array", "One job array"
    # A kind without arrays (Kubernetes), or runs that ask for different resources: an array's tasks all hold what
    # its one header asks for.
    RUNS = "runs", "Run by run"


class SweepState(models.TextChoices):
    """The sweep's submission (run by run: submitting until its last run is let out); how its runs fare is read from
    the runs themselves (sweeps/progress.py)."""

    QUEUED = "queued", "Queued"
    SUBMITTING = "submitting", "Submitting"
    SUBMITTED = "submitted", "Submitted"
    SUBMIT_FAILED = "submit_failed", "Submit failed"
    CANCELLED = "cancelled", "Cancelled before submission"


class Sweep(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sweeps")
    course = models.ForeignKey("courses.Course", on_delete=models.PROTECT, related_name="sweeps")
    template = models.ForeignKey("jobs.JobTemplate", on_delete=models.PROTECT, related_name="sweeps")
    cluster = models.ForeignKey("clusters.Cluster", on_delete=models.PROTECT, related_name="sweeps")
    account = models.ForeignKey("clusters.ClusterAccount", null=True, blank=True, on_delete=models.SET_NULL)
    base_params = models.JSONField("values shared by every run", default=dict)
    swept = models.JSONField("swept parameters and their values", default=dict)  # {name: [value, …]}, in order
    mode = models.CharField(max_length=8, choices=SweepMode.choices, default=SweepMode.GRID)
    max_concurrent = models.PositiveIntegerField("runs at once")
    submission = models.CharField(max_length=8, choices=SweepSubmission.choices, default=SweepSubmission.ARRAY)
    script = models.TextField(help_text="The array's script, exactly as submitted (run by run: the first run's).")
    values_file = models.TextField(help_text="One line per task: the run's id and its swept values.")
    state = models.CharField(max_length=16, choices=SweepState.choices, default=SweepState.QUEUED)
    scheduler_id = models.CharField("array job id", max_length=64, blank=True)
    error = models.TextField(blank=True)
    submit_attempts = models.PositiveIntegerField(default=0)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True, help_text="When its last run ended (told once).")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="sweep_owner_created")]

    def __str__(self) -> str:
        return f"Sweep of {self.template.name} #{self.short_id}"

    def get_absolute_url(self) -> str:
        return reverse("sweeps:detail", args=[self.pk])

    @property
    def short_id(self) -> str:
        return str(self.pk)[:8]


class SweepRun(models.Model):
    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="runs")
    job = models.OneToOneField("jobs.Job", on_delete=models.CASCADE, related_name="sweep_run")
    index = models.PositiveIntegerField("task index")

    class Meta:
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["sweep", "index"], name="sweep_run_unique_index")]

    def __str__(self) -> str:
        return f"Run {self.index} of {self.sweep_id}"
