from django.apps import AppConfig


class SignonConfig(AppConfig):
    name = "signon"
    verbose_name = "Campus sign-in"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import ldap  # noqa: F401  (connects django-auth-ldap's populate_user signal)
