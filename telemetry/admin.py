from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from clusters.backends.base import BackendError
from clusters.backends.ssh import fingerprint, probe_host_key

from . import node_keys
from .models import JobSummary, Node


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["name", "cluster", "gpus", "has_gpu", "scheduler_state", "status", "last_sample_at"]
    list_filter = ["cluster", "has_gpu"]
    search_fields = ["name", "address"]
    # The pinned key is shown as its fingerprint and changes only through "Check and pin the host key", never typed.
    fields = ["cluster", "name", "address", "ssh_port", "pinned_key", "presented_key", "gpus", "has_gpu", "status"]
    readonly_fields = ["cluster", "name", "gpus", "has_gpu", "status", "pinned_key", "presented_key"]

    @admin.display(description="pinned SSH host key")
    def pinned_key(self, node: Node) -> str:
        return node_keys.describe_pinned(node)

    @admin.display(description="key the node presents now")
    def presented_key(self, node: Node) -> str:
        """The fingerprint of what the node's sshd offers right now, and the way to pin it."""
        if not node.address:
            return "no address"
        try:
            key = probe_host_key(node.address, node.ssh_port)
        except BackendError as exc:
            return str(exc)
        pinned = node.pinned_host_key()
        verdict = "matches the pinned key" if node_keys.same_key(key, pinned) else "not pinned"
        url = reverse("admin:telemetry_node_pin", args=[node.pk])
        return format_html(
            '{} {} ({}) · <a href="{}" id="check-and-pin">Check and pin the host key</a>',
            fingerprint(key),
            key.split()[0],
            verdict,
            url,
        )

    def has_add_permission(self, request) -> bool:
        return False  # nodes come from the scheduler

    def get_urls(self):
        pin = path("<int:pk>/pin-host-key/", self.admin_site.admin_view(self.pin_host_key), name="telemetry_node_pin")
        return [pin, *super().get_urls()]

    def pin_host_key(self, request, pk: int):
        """Show the fingerprint the node presents; pin that key when the admin confirms it (a POST of the very key
        the node still presents)."""
        node = get_object_or_404(Node.objects.select_related("cluster"), pk=pk)
        if not self.has_change_permission(request, node):
            raise PermissionDenied("Pinning a node's host key needs the admin's change permission on nodes.")
        context = {**self.admin_site.each_context(request), "node": node, "opts": self.model._meta}
        context["pinned"] = node_keys.describe_pinned(node)
        if not node.address:
            context["error"] = "The node has no address: set it on the node's page first."
            return TemplateResponse(request, "admin/telemetry/node/pin_host_key.html", context)
        try:
            offered = probe_host_key(node.address, node.ssh_port)
        except BackendError as exc:
            context["error"] = str(exc)
            return TemplateResponse(request, "admin/telemetry/node/pin_host_key.html", context)
        if request.method == "POST" and request.POST.get("host_key"):
            if request.POST["host_key"].strip() != offered:
                context["error"] = "The node's key changed while you were confirming it. Check it again."
            else:
                node_keys.pin(node, offered, actor=request.user)
                messages.success(request, f"Pinned {fingerprint(offered)} for {node}.")
                context["pinned"] = node_keys.describe_pinned(node)
        context.update(offered=offered, offered_fingerprint=fingerprint(offered), offered_type=offered.split()[0])
        context["matches"] = node_keys.same_key(offered, node.pinned_host_key())
        return TemplateResponse(request, "admin/telemetry/node/pin_host_key.html", context)


@admin.register(JobSummary)
class JobSummaryAdmin(admin.ModelAdmin):
    list_display = ["job", "gpu_hours", "mean_gpu_util", "max_gpu_util", "peak_gpu_memory_mib", "mean_tokens_per_s"]
    readonly_fields = [f.name for f in JobSummary._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
