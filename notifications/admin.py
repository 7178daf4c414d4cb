"""Admins see every delivery (read-only: the record of what was sent, throttled or given up) and each course's
webhook."""

from django.contrib import admin

from .models import CourseWebhook, Notification


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ("created_at", "event", "channel", "user", "course", "status", "tries", "error")
    list_filter = ("channel", "status", "event")
    search_fields = ("user__username", "course__slug", "key")
    date_hierarchy = "created_at"
    list_select_related = ("user", "course")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(CourseWebhook)
class CourseWebhookAdmin(admin.ModelAdmin):
    list_display = ("course", "enabled", "updated_by", "updated_at")
    readonly_fields = ("updated_by", "updated_at")
