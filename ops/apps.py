from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Operating the portal itself: health probes, Prometheus metrics, structured logs, the operations page."""

    name = "ops"
    verbose_name = "Operations"

    def ready(self) -> None:
        from . import signals  # noqa: F401  (Celery hooks: request ids into tasks, task metrics)
