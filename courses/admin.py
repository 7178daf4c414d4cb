from django.contrib import admin

from . import quotas
from .models import Course, Enrollment, TermNotice


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
        (
            "Per-student limits",
            {"fields": ["max_concurrent_jobs", "max_gpus", "max_cpus", "max_memory_gb", "max_pods", "max_volumes"]},
        ),
        (
            "Kubernetes",
            {
                "fields": ["namespace_mode", "ingress_host"],
                "description": "The namespace quota is the per-student limits times the students it holds.",
            },
        ),
    ]


@admin.register(Enrollment)
class EnrollmentAdmin(admin.ModelAdmin):
    list_display = ["user", "course", "role"]
    list_filter = ["course", "role"]
    search_fields = ["user__username", "course__slug"]
    autocomplete_fields = ["user", "course"]


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
