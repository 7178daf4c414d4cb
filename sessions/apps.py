from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "sessions"
    label = "workspace"  # "sessions" is django.contrib.sessions' label
    verbose_name = "Workspace sessions"
