from typing import cast

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import models, transaction
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html_join
from django.utils.text import capfirst

from . import kinds, services
from .backends import BackendError
from .backends.ssh import fingerprint, probe_host_key
from .choices import RunAs
from .forms import TOKEN_WARNING, ApiTokenField, ClusterAccountForm, NameListField, token_expiry_text
from .identity import set_cluster_username, validate_cluster_username
from .kind_settings import settings_form_fields
from .kinds import get_backend
from .models import Cluster, ClusterAccount, ClusterIdentity, CredentialEvent


def warn_if_token_lapses(request, accounts) -> None:
    """A warning on the admin page while a stored slurmrestd token has lapsed or lapses within a week."""
    soon = timezone.now() + TOKEN_WARNING
    for account in accounts:
        if account.api_token_expires_at is not None and account.api_token_expires_at <= soon:
            messages.warning(request, f"The slurmrestd token of {account} {token_expiry_text(account)}")


class ClusterAccountInline(admin.TabularInline):
    model = ClusterAccount
    fields = ["username", "user", "auth_method", "has_secret", "api_token_expiry"]
    readonly_fields = ["has_secret", "api_token_expiry"]
    extra = 0
    show_change_link = True
    can_delete = False

    @admin.display(boolean=True, description="credential stored")
    def has_secret(self, obj):
        return obj.has_secret

    def has_add_permission(self, request, obj=None):
        return False  # added on the account page, where the credential field lives

    @admin.display(description="token expiry")
    def api_token_expiry(self, obj):
        return token_expiry_text(obj)


class ClusterAdminForm(forms.ModelForm):
    """A cluster's fields and its kind's settings (Kind.cluster_settings, added as form fields by
    ClusterAdmin.get_form), the settings shown from and kept in Cluster.kind_settings."""

    partitions = NameListField(help_text="Partitions students may use, separated by commas, e.g. “debug, gpu”.")
    gpu_types = NameListField(label="GPU types", help_text="GRES GPU types, separated by commas, e.g. “a100, h100”.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        stored = self.instance.kind_settings or {}
        for name in self.settings_names():  # what the row holds, else the kind's default
            self.initial[name] = stored.get(name, self.fields[name].initial)

    def settings_names(self) -> list[str]:
        columns = {field.name for field in Cluster._meta.get_fields()}
        return [name for name in self.fields if name not in columns]

    def typed_settings(self) -> list[str]:
        """The settings the cluster's kind declares that an admin types (detected ones are Test connection's)."""
        kind = self.cleaned_data.get("kind") or self.instance.kind
        typed = kinds.kind_of(kind).cluster_settings.names(detected=False) if kind in kinds.KINDS else []
        return [name for name in typed if name in self.fields]


# A new cluster's "Jobs run as": left empty, Cluster.clean() gives it its kind's isolated mode (kinds.default_run_as).
NEW_CLUSTER_RUN_AS = ""
NEW_CLUSTER_RUN_AS_LABEL = "Each student's own user (sudo on SLURM, impersonation on slurmrestd)"


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ["name", "title", "kind", "address", "enabled", "emulated", "host_key_status"]
    list_filter = ["kind", "enabled", "emulated"]
    search_fields = ["name", "title", "host"]
    # Filled in by "Test connection"; shown, never typed. The pinned key reads as its fingerprint.
    # The kind's own detected settings are shown by their form fields (disabled, in words: clusters/kind_settings.py).
    readonly_fields = [
        "pinned_host_key",
        "host_key_pinned_at",
        "server_version",
        "partition_limits_summary",
        "partition_limits_at",
    ]
    shown_as = {"host_key": "pinned_host_key", "partition_limits": "partition_limits_summary"}
    inlines = [ClusterAccountInline]
    change_form_template = "admin/clusters/cluster/change_form.html"
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def _kinds_shown(self, request, obj) -> list[str]:
        """The cluster's own kind; for a new cluster the one chosen, or every kind (the page hides the others)."""
        chosen = obj.kind if obj else request.POST.get("kind") or request.GET.get("kind")
        return [chosen] if chosen in kinds.KINDS else kinds.names()

    def get_fieldsets(self, request, obj=None):
        """Only the cluster's own kind's fields; a new cluster shows every kind's, and the page hides the others."""
        kinds_shown = self._kinds_shown(request, obj)
        detected = set(self.readonly_fields) | set(self.shown_as)
        detected.update(*(kinds.kind_of(kind).cluster_settings.names(detected=True) for kind in kinds_shown))
        sets = [
            (kind, title, options, [self.shown_as.get(f, f) for f in options["fields"] if obj or f not in detected])
            for kind in kinds_shown
            for title, options in kinds.kind_of(kind).admin_fieldsets
        ]
        users: dict[str, list[str]] = {}  # field → the kinds that show it (a new cluster shows every kind's)
        titles: dict[str, set[str]] = {}
        for kind, title, _, fields in sets:
            for name in fields:
                users.setdefault(name, []).append(kind)
                titles.setdefault(name, set()).add(title)
        general = ["name", "title", "kind", "enabled", "emulated", "run_as"]
        fieldsets: list[tuple[str | None, dict]] = [(None, {"fields": general})]
        placed: set[str] = set()
        for kind, title, options, fields in sets:
            own = [f for f in fields if len(users[f]) == 1]
            if own:
                fieldsets.append((title, {**options, "fields": own, "classes": [f"kind-{kind}"]}))
            groups: dict[tuple, list[str]] = {}  # a field two kinds share appears once, shown for both
            for name in [f for f in fields if len(users[f]) > 1 and f not in placed]:
                groups.setdefault(tuple(users[name]), []).append(name)
            for sharing, shared in groups.items():
                placed.update(shared)
                same_title = all(titles[f] == {title} for f in shared)
                heading = title if same_title else ", ".join(self._label(f) for f in shared)
                fieldsets.append((heading, {"fields": shared, "classes": [f"kind-{k}" for k in sharing]}))
        return fieldsets

    def get_form(self, request, obj=None, change=False, **kwargs):
        owned = [kinds.kind_of(kind).cluster_settings for kind in self._kinds_shown(request, obj)]
        kwargs["form"] = type("ClusterForm", (ClusterAdminForm,), settings_form_fields(owned, detected=obj is not None))
        form = super().get_form(request, obj, change, **kwargs)
        field = cast("forms.ChoiceField | None", form.base_fields.get("run_as"))
        if field is not None and obj is not None:  # only the modes the cluster's kind supports
            modes = kinds.backend_class(obj.kind).run_as_modes
            field.choices = [(value, label) for value, label in RunAs.choices if value in modes]
        elif field is not None:  # a new cluster: each student's own identity unless the admin picks otherwise
            field.choices = [(NEW_CLUSTER_RUN_AS, NEW_CLUSTER_RUN_AS_LABEL), *RunAs.choices]
            field.initial = NEW_CLUSTER_RUN_AS
        sessions = form.base_fields.get("lab_reservations")
        holds = kinds.kind_of(obj.kind).lab_holds if obj is not None and obj.kind in kinds.KINDS else None
        if sessions is not None and holds is not None:  # what the switch does is the kind's own
            sessions.help_text = holds.admin_help
        return form

    def change_view(self, request, object_id, form_url="", extra_context=None):
        cluster = self.get_object(request, object_id)
        if cluster is not None and request.method == "GET":
            warn_if_token_lapses(request, cluster.accounts.exclude(api_token_encrypted=""))
        if cluster is not None and cluster.kind in kinds.KINDS:  # the kind's own word on keeping students apart
            kind = kinds.kind_of(cluster.kind)
            extra_context = {
                **(extra_context or {}),
                "isolation_note": kind.isolation_note,
                "stages_lab_files": kind.stages_lab_files,
            }
        return super().change_view(request, object_id, form_url, extra_context)

    def save_model(self, request, obj, form, change):
        """The kind's typed settings join what the row holds, read under its lock: a fact Test connection stored
        while the page was open stays."""
        typed = {name: form.cleaned_data[name] for name in form.typed_settings() if name in form.cleaned_data}
        with transaction.atomic():
            stored = Cluster.objects.select_for_update().filter(pk=obj.pk).values_list("kind_settings", flat=True)
            obj.kind_settings = {**(stored.first() or {}), **typed} if obj.pk else typed
            super().save_model(request, obj, form, change)

    def _label(self, name: str) -> str:
        settings_field = next(
            (f for kind in kinds.names() if (f := kinds.kind_of(kind).cluster_settings.form_fields().get(name))), None
        )
        if settings_field is not None:
            return capfirst(str(settings_field.label or name))
        return capfirst(self.model._meta.get_field(name).verbose_name)

    def get_readonly_fields(self, request, obj=None):
        # A cluster's kind is fixed once it exists: its accounts, templates and jobs were made for it.
        return ["kind", *self.readonly_fields] if obj else self.readonly_fields

    @admin.display(description="pinned SSH host key")
    def pinned_host_key(self, obj):
        if not obj.host_key:
            return "Not pinned: run “Test connection” and confirm the fingerprint."
        return f"{fingerprint(obj.host_key)} ({obj.host_key.split()[0]})"

    @admin.display(description="partition limits")
    def partition_limits_summary(self, obj):
        lines = [obj.limits_of(name).describe() for name in sorted(obj.partition_limits or {})]
        return format_html_join("", "{}<br>", ((line,) for line in lines)) or (
            "Not learnt yet: run “Test connection” (they are refreshed on a schedule after that)."
        )

    @admin.display(description="address")
    def address(self, obj):
        if obj.kind not in kinds.KINDS:  # a kind this portal no longer registers: what the row holds
            return obj.api_url or f"{obj.host}:{obj.port}"
        return kinds.kind_of(obj.kind).address(obj)

    @admin.display(description="host key")
    def host_key_status(self, obj):
        note = kinds.kind_of(obj.kind).host_key_note(obj) if obj.kind in kinds.KINDS else ""
        if note:
            return note
        return fingerprint(obj.host_key) if obj.host_key else "not pinned"

    def get_urls(self):
        own = [
            path("<int:pk>/test-connection/", self.admin_site.admin_view(self.test_connection), name="cluster_test"),
            path("<int:pk>/stage-lab-files/", self.admin_site.admin_view(self.stage_lab_files), name="cluster_stage"),
        ]
        return own + super().get_urls()

    def test_connection(self, request, pk: int):
        """Show the host key's fingerprint; pin it when the admin confirms; then log in and ask SLURM."""
        cluster = get_object_or_404(Cluster, pk=pk)
        if not self.has_change_permission(request, cluster):
            raise PermissionDenied("Changing clusters needs the admin's change permission.")
        kind = kinds.kind_of(cluster.kind)
        context = {**self.admin_site.each_context(request), "cluster": cluster, "opts": self.model._meta, "kind": kind}
        context["target"] = kind.connection_target(cluster)
        if not kind.tests_over_ssh(cluster):
            return self._test_backend(request, cluster, context)
        try:
            offered = probe_host_key(cluster.host, cluster.port)
        except BackendError as exc:
            context["error"] = str(exc)
            return _connection_page(request, context)
        if request.method == "POST" and request.POST.get("host_key"):
            if request.POST["host_key"].strip() != offered:
                context["error"] = "The server's key changed while you were confirming it. Check it again."
            else:
                services.pin_host_key(cluster, offered, actor=request.user)
                messages.success(request, f"Pinned {fingerprint(offered)} for {cluster}.")
        context.update(offered=offered, offered_fingerprint=fingerprint(offered))
        context["pinned_fingerprint"] = fingerprint(cluster.host_key) if cluster.host_key else ""
        context["matches"] = cluster.host_key.strip() == offered
        if context["matches"]:
            try:
                report = get_backend(cluster).test_connection()
                context["report"] = report
                services.save_connection_facts(cluster, report)  # accounting and partition limits
            except BackendError as exc:
                context["error"] = str(exc)
        return _connection_page(request, context)

    def _test_backend(self, request, cluster: Cluster, context: dict):
        """No SSH login to test: the backend alone answers (a Kubernetes API server, slurmrestd without a login
        node)."""
        try:
            report = get_backend(cluster).test_connection()
        except BackendError as exc:
            context["error"] = str(exc)
        else:
            context["report"] = report
            services.save_connection_facts(cluster, report)
        return _connection_page(request, context)

    def stage_lab_files(self, request, pk: int):
        cluster = get_object_or_404(Cluster, pk=pk)
        if request.method != "POST" or not self.has_change_permission(request, cluster):
            return redirect(reverse("admin:clusters_cluster_change", args=[pk]))
        if not kinds.kind_of(cluster.kind).stages_lab_files:
            messages.error(request, f"Jobs on {cluster} do not run from a lab directory: there are no files to stage.")
            return redirect(reverse("admin:clusters_cluster_change", args=[pk]))
        try:
            count = get_backend(cluster).stage_lab_files(settings.GPULAB_LAB_FILES_DIR)
        except BackendError as exc:
            messages.error(request, f"Staging failed: {exc}")
        else:
            messages.success(request, f"Copied {count} files to {cluster.lab_dir} on {cluster}.")
        return redirect(reverse("admin:clusters_cluster_change", args=[pk]))


def _connection_page(request, context: dict) -> TemplateResponse:
    if "report" in context:
        context["verdict"] = context["kind"].connection_verdict(context["cluster"], context["report"].ok)
    return TemplateResponse(request, "admin/clusters/cluster/test_connection.html", context)


class ClusterAccountAdminForm(ClusterAccountForm):
    api_token = ApiTokenField()

    class Meta(ClusterAccountForm.Meta):
        fields = ["cluster", "user", "username", "auth_method"]


@admin.register(ClusterAccount)
class ClusterAccountAdmin(admin.ModelAdmin):
    list_display = ["username", "cluster", "user", "auth_method", "has_secret", "api_token_expiry", "updated_at"]
    list_filter = ["cluster", "auth_method"]
    search_fields = ["username", "user__username", "cluster__name"]
    autocomplete_fields = ["user"]
    form = ClusterAccountAdminForm
    fields = ["cluster", "user", "username", "auth_method", "secret", "api_token", "api_token_expiry"]
    readonly_fields = ["api_token_expiry"]

    @admin.display(description="token expiry")
    def api_token_expiry(self, obj):
        return token_expiry_text(obj)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        account = self.get_object(request, object_id)
        if account is not None and request.method == "GET":
            warn_if_token_lapses(request, [account])
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.display(boolean=True, description="credential stored")
    def has_secret(self, obj):
        return obj.has_secret

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        services.save_account(obj, secret=data.get("secret"), api_token=data.get("api_token"), actor=request.user)

    def delete_model(self, request, obj):
        services.remove_account(obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        for account in queryset:
            services.remove_account(account, actor=request.user)


class ClusterIdentityForm(forms.ModelForm):
    class Meta:
        model = ClusterIdentity
        fields = ["user", "username", "source"]

    def clean_username(self):
        user = self.cleaned_data.get("user")
        return validate_cluster_username(self.cleaned_data.get("username", "").strip(), user)


@admin.register(ClusterIdentity)
class ClusterIdentityAdmin(admin.ModelAdmin):
    """Cluster usernames: what each user's jobs run as where a cluster runs jobs as each student's own user."""

    form = ClusterIdentityForm
    list_display = ["username", "user", "source", "set_by", "updated_at"]
    list_filter = ["source"]
    search_fields = ["username", "user__username", "user__email"]
    autocomplete_fields = ["user"]
    readonly_fields = ["set_by", "updated_at"]

    def get_readonly_fields(self, request, obj=None):
        return ["user", *self.readonly_fields] if obj else self.readonly_fields  # a username moves by a new row

    def save_model(self, request, obj, form, change):
        set_cluster_username(obj.user, obj.username, source=obj.source, actor=request.user)


@admin.register(CredentialEvent)
class CredentialEventAdmin(admin.ModelAdmin):
    list_display = ["at", "cluster", "action", "account_username", "account_owner", "actor", "detail"]
    list_filter = ["cluster", "action"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
