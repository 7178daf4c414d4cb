from django.contrib import admin

from .models import CampusIdentity, CourseGroup, GroupSyncChange


@admin.register(CourseGroup)
class CourseGroupAdmin(admin.ModelAdmin):
    """Admins name a course's campus groups: members are enrolled at sign-in and by `manage.py sync_course_groups`."""

    list_display = ["course", "source", "group", "role"]
    list_filter = ["source", "role", "course"]
    search_fields = ["group", "course__slug", "course__name"]
    autocomplete_fields = ["course"]


@admin.register(GroupSyncChange)
class GroupSyncChangeAdmin(admin.ModelAdmin):
    """The audit of group sync: read-only."""

    list_display = ["at", "course", "username", "action", "old_role", "new_role", "source", "groups", "via"]
    list_filter = ["action", "source", "via", "course"]
    search_fields = ["username", "course__slug"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(CampusIdentity)
class CampusIdentityAdmin(admin.ModelAdmin):
    list_display = ["user", "subject", "issuer", "created_at"]
    search_fields = ["user__username", "subject"]
    readonly_fields = ["user", "issuer", "subject", "created_at"]

    def has_add_permission(self, request):
        return False
