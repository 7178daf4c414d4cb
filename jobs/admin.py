from django.contrib import admin, messages

from .authoring import publish
from .models import CourseTemplate, Job, JobEvent, JobTemplate, JobUsage


class CourseTemplateInline(admin.TabularInline):
    """The courses that offer the template, and its place in each course's catalog (empty: last)."""

    model = CourseTemplate
    extra = 1
    fields = ["course", "position"]
    verbose_name = "course"
    verbose_name_plural = "courses (and the template's place in each course's catalog)"


@admin.register(JobTemplate)
class JobTemplateAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "backend", "status", "builtin", "max_gpus", "updated_at"]
    list_filter = ["status", "backend", "builtin", "courses"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [CourseTemplateInline]
    actions = ["publish_selected"]

    @admin.action(description="Publish (only those that render and pass bash -n)")
    def publish_selected(self, request, queryset):
        for template in queryset:
            result = publish(template)
            if result.ok:
                messages.success(request, f"Published {template.name}.")
            else:
                messages.error(request, f"{template.name} not published: {' '.join(result.errors)}")

    def save_model(self, request, obj, form, change):
        if obj.status == JobTemplate.Status.PUBLISHED and "status" not in form.changed_data and form.changed_data:
            obj.status = JobTemplate.Status.DRAFT  # an edited template is checked again before students see it
            messages.info(request, "Saved as draft; use the Publish action to check and publish it again.")
        elif obj.status == JobTemplate.Status.PUBLISHED and "status" in form.changed_data:
            obj.status = JobTemplate.Status.DRAFT
            super().save_model(request, obj, form, change)
            result = publish(obj)
            if not result.ok:
                messages.error(request, "Not published: " + " ".join(result.errors))
            return
        super().save_model(request, obj, form, change)


class JobEventInline(admin.TabularInline):
    model = JobEvent
    extra = 0
    can_delete = False
    readonly_fields = ["at", "kind", "from_state", "to_state", "actor", "message"]

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    """Jobs are records: the admin reads them; state moves only through the portal's state machine."""

    list_display = ["short_id", "owner", "course", "template", "cluster", "state", "scheduler_id", "created_at"]
    list_filter = ["state", "cluster", "course", "template"]
    search_fields = ["id", "owner__username", "scheduler_id"]
    list_select_related = ["owner", "course", "template", "cluster"]
    inlines = [JobEventInline]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(JobUsage)
class JobUsageAdmin(admin.ModelAdmin):
    """What SLURM accounting recorded of finished jobs: written by the poll, read here."""

    list_display = ["job", "elapsed_seconds", "cpus", "cpu_efficiency", "max_rss_bytes", "requested_memory_bytes"]
    readonly_fields = [f.name for f in JobUsage._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
