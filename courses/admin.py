from typing import ClassVar

from django import forms
from django.contrib import admin
from django.utils.html import format_html_join

from clusters import kinds
from clusters.backends import BackendError
from clusters.kind_settings import KindSettings, settings_form_fields

from . import quotas, roster_changes
from .models import Course, Enrollment, LabSession, LabSessionEvent, RosterChange, TermNotice


class CourseAdminForm(forms.ModelForm):
    """A course's fields and each kind's settings of it (Kind.course_settings, added as form fields by
    CourseAdmin.get_form), shown from and kept in Course.kind_settings[kind]."""

    owners: ClassVar[dict[str, type[KindSettings]]] = {}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        stored = self.instance.kind_settings or {}
        for kind, owner in self.owners.items():
            own = stored.get(kind) or {}
            for name in owner.names():  # what the row holds, else the kind's default
                if name in self.fields:
                    self.initial.setdefault(name, own.get(name, self.fields[name].initial))

    def save(self, commit=True):
        stored = dict(self.instance.kind_settings or {})
        for kind, owner in self.owners.items():
            typed = {name: self.cleaned_data[name] for name in owner.names() if name in self.cleaned_data}
            if typed:
                stored[kind] = {**(stored.get(kind) or {}), **typed}
        self.instance.kind_settings = stored
        return super().save(commit)


class EnrollmentInline(admin.TabularInline):
    model = Enrollment
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Course)
class CourseAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "term_starts_at", "term_ends_at", "max_concurrent_jobs", "max_gpus"]
    list_filter = [("term_ends_at", admin.EmptyFieldListFilter)]
    date_hierarchy = "term_ends_at"
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["clusters"]
    inlines = [EnrollmentInline]
    readonly_fields = ["kueue_usage"]

    @admin.display(description="the course's queue now")
    def kueue_usage(self, obj):
        """Each Kueue cluster's ClusterQueue for the course, as the cluster reports it now (one call per cluster)."""
        lines = [queue_line(cluster, obj) for cluster in obj.clusters.filter(enabled=True)] if obj.pk else []
        lines = [line for line in lines if line]
        return format_html_join("", "{}<br>", ((line,) for line in lines)) or "no cluster of the course runs Kueue"

    def save_formset(self, request, form, formset, change):
        """Enrollments go through the audited roster service, like the instructors' roster page. An admin may leave
        a course without an instructor (to hand it over); the change is recorded all the same."""
        if formset.model is not Enrollment:
            return super().save_formset(request, form, formset, change)
        save_enrollments(request, formset.save(commit=False), formset)
        formset.save_m2m()

    def save_model(self, request, obj, form, change):
        """Quota fields go through the audited service, like the instructors' quota page."""
        values = {name: getattr(obj, name) for name in quotas.FIELDS}
        previous = {name: form.initial.get(name) for name in quotas.FIELDS}
        super().save_model(request, obj, form, change)
        if change:
            quotas.set_course_limits(obj, values, actor=request.user, previous=previous)

    fieldsets = [
        (None, {"fields": ["name", "slug", "description", "clusters"]}),
        (
            "Term",
            {
                "fields": ["term_starts_at", "term_ends_at"],
                "description": "Students launch only inside the term. A week before the end the instructors are "
                "told; at the end running jobs are stopped and the course becomes read-only. Both empty: no term.",
            },
        ),
        ("Per-student limits", {"fields": ["max_concurrent_jobs", "max_gpus"]}),
    ]

    def get_fieldsets(self, request, obj=None):
        """The course's own fields, then each kind's settings of it (Kind.course_fieldsets), then its queues."""
        owned = [fieldset for name in kinds.names() for fieldset in kinds.kind_of(name).course_fieldsets]
        queues = ("Scheduler queues", {"fields": ["kueue_usage"]})
        return [*self.fieldsets, *owned, *([queues] if obj is not None else [])]

    def get_form(self, request, obj=None, change=False, **kwargs):
        owners = {name: kinds.kind_of(name).course_settings for name in kinds.names()}
        fields = settings_form_fields(owners.values(), detected=False)
        kwargs["form"] = type("CourseForm", (CourseAdminForm,), {**fields, "owners": owners})
        return super().get_form(request, obj, change, **kwargs)


def queue_line(cluster, course) -> str:
    try:
        summary = kinds.kind_of(cluster.kind).queue_summary(cluster, course)
    except BackendError as exc:
        return f"{cluster.display_name}: {exc}"
    if summary is None:
        return ""
    borrowed = f", {summary.borrowed_gpus} borrowed from cohort {summary.cohort}" if summary.borrowed_gpus else ""
    return (
        f"{cluster.display_name}: ClusterQueue {summary.name} uses {summary.used_gpus} of its {summary.nominal_gpus} "
        f"GPUs{borrowed}; {summary.admitted} admitted, {summary.pending} pending"
    )


def save_enrollments(request, new_or_changed, formset) -> None:
    changed = {obj.pk: fields for obj, fields in formset.changed_objects}
    for enrollment in formset.deleted_objects:
        roster_changes.remove(enrollment.course, enrollment, actor=request.user, keep_an_instructor=False)
    for enrollment in new_or_changed:
        _save_enrollment(request, enrollment, changed.get(enrollment.pk))


def _save_enrollment(request, enrollment: Enrollment, changed_fields) -> None:
    course, user, role = enrollment.course, enrollment.user, enrollment.role
    if enrollment.pk is None:
        roster_changes.enroll(course, user, role, actor=request.user, enrollment=enrollment)
    elif not changed_fields:
        return
    elif set(changed_fields) == {"role"}:
        roster_changes.set_role(
            enrollment.course, enrollment, enrollment.role, actor=request.user, keep_an_instructor=False
        )
    else:  # another person or course on the same row: the old enrollment goes, a new one comes
        old = Enrollment.objects.select_related("course", "user").get(pk=enrollment.pk)
        roster_changes.remove(old.course, old, actor=request.user, keep_an_instructor=False)
        roster_changes.enroll(course, user, role, actor=request.user, enrollment=enrollment)


@admin.register(Enrollment)
class EnrollmentAdmin(admin.ModelAdmin):
    list_display = ["user", "course", "role"]
    list_filter = ["course", "role"]
    search_fields = ["user__username", "course__slug"]
    autocomplete_fields = ["user", "course"]

    def save_model(self, request, obj, form, change):
        _save_enrollment(request, obj, form.changed_data)

    def delete_model(self, request, obj):
        roster_changes.remove(obj.course, obj, actor=request.user, keep_an_instructor=False)

    def delete_queryset(self, request, queryset):
        for enrollment in queryset.select_related("course", "user"):
            self.delete_model(request, enrollment)


@admin.register(RosterChange)
class RosterChangeAdmin(admin.ModelAdmin):
    """Who enrolled, removed or changed the role of whom: written by the roster service, read here."""

    list_display = ["at", "course", "action", "person_username", "old_role", "new_role", "actor_username"]
    list_filter = ["action", "course"]
    search_fields = ["person_username", "actor_username", "course__slug"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(TermNotice)
class TermNoticeAdmin(admin.ModelAdmin):
    """What the term messages told whom: written by the beat task, read here."""

    list_display = ["course", "user", "kind", "term_ends_at", "sent_at", "mailed_at"]
    list_filter = ["kind", "course"]
    search_fields = ["user__username", "course__slug"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class LabSessionEventInline(admin.TabularInline):
    model = LabSessionEvent
    extra = 0
    can_delete = False
    readonly_fields = ("at", "actor", "from_state", "to_state", "message")
    fields = readonly_fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(LabSession)
class LabSessionAdmin(admin.ModelAdmin):
    """Read-only: sessions are booked and cancelled by instructors (courses/lab_sessions.py), which audit each move."""

    list_display = ["course", "cluster", "starts_at", "ends_at", "gpus", "gpus_held", "state"]
    list_filter = ["state", "cluster"]
    date_hierarchy = "starts_at"
    search_fields = ["course__slug", "course__name"]
    list_select_related = ["course", "cluster"]
    inlines = [LabSessionEventInline]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
