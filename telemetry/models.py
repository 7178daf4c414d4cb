"""What telemetry keeps in the database: the nodes it streams from, and each finished job's summary.

Live samples live in Redis for ten minutes (telemetry/stream.py); their downsampled series are stored here in
chunks (telemetry/recorder.py), so a job's charts outlive it.
"""

from __future__ import annotations

from django.db import models

from clusters.models import Cluster


class Node(models.Model):
    """A compute node, found by the collector through the scheduler (SLURM) or the metrics API (Kubernetes)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(max_length=255, help_text="The scheduler's name for the node.")
    address = models.CharField(max_length=255, blank=True, help_text="SLURM: where the collector connects (NodeAddr).")
    ssh_port = models.PositiveIntegerField("SSH port", default=22)
    host_key = models.TextField(
        "pinned SSH host key",
        blank=True,
        help_text="Empty: the cluster's pinned key is used when the node is the login host itself; any other node "
        "must have its key pinned here before the collector connects.",
    )
    gpus = models.PositiveIntegerField("GPUs", default=0, help_text="As the scheduler counts them (GRES).")
    has_gpu = models.BooleanField(
        "GPU telemetry", null=True, help_text="Whether nvidia-smi answered on the node; unknown until it is tried."
    )
    scheduler_state = models.CharField(max_length=64, blank=True)
    last_sample_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=255, blank=True, help_text="The collector's last word on the node.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster", "name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="node_unique_name_per_cluster")]

    def __str__(self) -> str:
        return f"{self.name} ({self.cluster.name})"

    @property
    def group(self) -> str:
        return f"telemetry.node.{self.pk}"

    def pinned_host_key(self) -> str:
        """The key a connection to this node must present; empty when none is pinned."""
        if self.host_key.strip():
            return self.host_key.strip()
        same_host = (self.address, self.ssh_port) == (self.cluster.host, self.cluster.port)
        return self.cluster.host_key.strip() if same_host else ""


class JobSummary(models.Model):
    """What a job used, stored when it ends; one row per job, for the course report."""

    job = models.OneToOneField("jobs.Job", on_delete=models.CASCADE, primary_key=True, related_name="summary")
    gpu_hours = models.FloatField("GPU-hours", default=0.0, help_text="GPUs held times hours running.")
    mean_gpu_util = models.FloatField("mean GPU utilization (%)", null=True, blank=True)
    max_gpu_util = models.FloatField("max GPU utilization (%)", null=True, blank=True)
    peak_gpu_memory_mib = models.FloatField("peak GPU memory (MiB)", null=True, blank=True)
    gpu_memory_total_mib = models.FloatField(
        "GPU memory (MiB)", null=True, blank=True, help_text="One GPU's memory: what the peak is a share of."
    )
    mean_tokens_per_s = models.FloatField("mean tok/s", null=True, blank=True)
    final_loss = models.FloatField(
        "final loss", null=True, blank=True, help_text="The loss of the trainer's last logged step."
    )
    idle_minutes = models.FloatField(
        "GPU idle minutes", default=0.0, help_text="Minutes every GPU of the job sat idle."
    )
    samples = models.PositiveIntegerField(default=0, help_text="GPU samples the means are taken over.")
    simulated_gpus = models.BooleanField(
        "simulated GPU figures",
        default=False,
        help_text="The GPU figures came from the demo's stand-in nvidia-smi: replayed, not measured on this job.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "job summaries"

    def __str__(self) -> str:
        return f"summary of {self.job_id}"


class SeriesChunk(models.Model):
    """A stretch of a job's (or a node's) charts as the collector flushed it: one row per owner per flush.

    `series` is {chart: {key: {"name", "x", "y"}}}: ten-second bucket means by time (ms), and every trainer point
    by step. A job's chunks are kept with the job; a node's for NODE_SERIES_DAYS (telemetry/recorder.py).
    """

    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.CASCADE, related_name="series_chunks")
    node = models.ForeignKey(Node, null=True, blank=True, on_delete=models.CASCADE, related_name="series_chunks")
    start = models.DateTimeField()
    end = models.DateTimeField()
    series = models.JSONField()

    class Meta:
        indexes = [
            models.Index(fields=["job", "start"], name="series_chunk_job_start"),
            models.Index(fields=["node", "start"], name="series_chunk_node_start"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(job__isnull=False, node__isnull=True)
                | models.Q(job__isnull=True, node__isnull=False),
                name="series_chunk_one_owner",
            )
        ]

    def __str__(self) -> str:
        return f"series of {self.job_id or f'node {self.node_id}'} from {self.start:%Y-%m-%d %H:%M:%S}"
