from django.apps import AppConfig


class PasswordsConfig(AppConfig):
    name = "passwords"
    verbose_name = "Local passwords: invitations and resets"
