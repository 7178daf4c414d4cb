from django.contrib import admin
from django.utils.html import format_html

from clusters.backends.base import BackendError
from clusters.backends.ssh import fingerprint, probe_host_key

from .models import JobSummary, Node


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["name", "cluster", "gpus", "has_gpu", "scheduler_state", "status", "last_sample_at"]
    list_filter = ["cluster", "has_gpu"]
    search_fields = ["name", "address"]
    fields = ["cluster", "name", "address", "ssh_port", "host_key", "presented_key", "gpus", "has_gpu", "status"]
    readonly_fields = ["cluster", "name", "gpus", "has_gpu", "status", "presented_key"]

    @admin.display(description="key the node presents now")
    def presented_key(self, node: Node) -> str:
        """What the node's sshd offers right now; the admin checks the fingerprint before pinning it above."""
        if not node.address:
            return "no address"
        try:
            key = probe_host_key(node.address, node.ssh_port)
        except BackendError as exc:
            return str(exc)
        pinned = node.pinned_host_key()
        verdict = "matches the pinned key" if pinned and key.split()[:2] == pinned.split()[:2] else "not pinned"
        return format_html("<code>{}</code><br>{} ({})", key, fingerprint(key), verdict)

    def has_add_permission(self, request) -> bool:
        return False  # nodes come from the scheduler


@admin.register(JobSummary)
class JobSummaryAdmin(admin.ModelAdmin):
    list_display = ["job", "gpu_hours", "mean_gpu_util", "max_gpu_util", "peak_gpu_memory_mib", "mean_tokens_per_s"]
    readonly_fields = [f.name for f in JobSummary._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
