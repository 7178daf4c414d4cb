from django.apps import AppConfig


class SweepsConfig(AppConfig):
    name = "sweeps"
    verbose_name = "Sweeps"

    def ready(self) -> None:
        from . import endings  # noqa: F401  one message when a sweep ends (its receiver)
