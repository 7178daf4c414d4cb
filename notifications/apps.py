from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    verbose_name = "Notifications"

    def ready(self) -> None:
        from . import (
            budget_hooks,  # noqa: F401  (connects to the budget pass signal)
            job_hooks,  # noqa: F401  (connects to jobs' state-move signal)
        )
