from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    verbose_name = "Notifications"

    def ready(self) -> None:
        from . import job_hooks  # noqa: F401  (connects to jobs' state-move signal)
