from django.apps import AppConfig


class LabsConfig(AppConfig):
    name = "labs"
    verbose_name = "Labs"

    def ready(self) -> None:
        from . import live  # noqa: F401  (connects to jobs' state-move signal: the progress grid's live updates)
