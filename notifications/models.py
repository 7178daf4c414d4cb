"""Who wants what (Preference), where a course's webhook posts (CourseWebhook), and every delivery (Notification).

A Notification row is the record of one message to one recipient on one channel; its `key` names the occurrence
(e.g. "failed:<job id>"), and a unique constraint keeps one row per recipient, channel and key, so the same event
reported twice is sent once. The row is written before the send is queued; the tasks mark it sent, failed or
given up.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .events import WEBHOOK_DEFAULT_EVENTS, Channel, Event


class Preference(models.Model):
    """A person's choice for one event on one channel; without a row, events.default_on decides."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_prefs")
    event = models.CharField(max_length=32, choices=Event.choices)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    enabled = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "event", "channel"], name="notification_pref_once")]

    def __str__(self) -> str:
        return f"{self.user}: {self.event} by {self.channel} {'on' if self.enabled else 'off'}"


def _default_webhook_events() -> list[str]:
    return [str(e) for e in WEBHOOK_DEFAULT_EVENTS]


class CourseWebhook(models.Model):
    """A Slack/Mattermost-compatible incoming webhook set by the course's instructor; receives `{"text": …}`."""

    course = models.OneToOneField("courses.Course", on_delete=models.CASCADE, related_name="webhook")
    url = models.URLField("webhook URL", max_length=500)
    events = models.JSONField(default=_default_webhook_events, help_text="The events posted to the webhook.")
    enabled = models.BooleanField(default=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Webhook of {self.course}"


class Notification(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        SENT = "sent", "Sent"
        THROTTLED = "throttled", "Not sent: too many in the last hour"
        FAILED = "failed", "Gave up"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="notifications"
    )
    course = models.ForeignKey(
        "courses.Course", null=True, blank=True, on_delete=models.CASCADE, related_name="notifications"
    )
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    event = models.CharField(max_length=32, choices=Event.choices)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    key = models.CharField(max_length=200, help_text="The occurrence: one message per recipient, channel and key.")
    subject = models.CharField(max_length=200)
    text = models.TextField()
    url = models.CharField(max_length=300, blank=True, help_text="The portal page the message points to.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    tries = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "channel", "key"], condition=models.Q(user__isnull=False), name="notification_once"
            ),
            models.UniqueConstraint(
                fields=["course", "channel", "key"],
                condition=models.Q(user__isnull=True),
                name="notification_once_per_course",
            ),
        ]
        indexes = [models.Index(fields=["user", "channel", "-created_at"], name="notification_user_recent")]

    def __str__(self) -> str:
        return f"{self.event} to {self.user or self.course} by {self.channel}"
