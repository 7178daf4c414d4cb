"""The login page: the campus button first when OIDC is on, then the password form (LDAP and/or local passwords)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import views as auth_views

from .credentials import LoginForm, bad_request_when_too_long

DIRECTORY_DOWN = "The campus directory did not answer, so your password could not be checked. Try again in a minute."


def sign_in_context() -> dict:
    ldap, local = settings.SIGNON_LDAP, settings.SIGNON_LOCAL_PASSWORDS
    return {
        "campus_button": settings.SIGNON_OIDC and settings.SIGNON_OIDC_BUTTON,
        "password_form": ldap or local,
        "password_reset": local,  # portal passwords only: a campus password is reset at the campus
        # With LDAP the password is the campus one; a portal-only password is for admins and invited people.
        "password_heading": "Campus username and password" if ldap else "Username and password",
    }


class LoginView(auth_views.LoginView):
    form_class = LoginForm  # a too-long username or password is refused before the lockout counts it

    def get_form(self, form_class=None):
        form = super().get_form(form_class)
        if settings.SIGNON_OIDC:  # the campus button comes first: a phone's keyboard must not pop up for the field
            form.fields["username"].widget.attrs.pop("autofocus", None)
        return form

    def get_context_data(self, **kwargs):
        context = {**super().get_context_data(**kwargs), **sign_in_context()}
        if getattr(self.request, "campus_directory_down", False):  # set by signon.ldap.directory_trouble
            context["directory_down"] = DIRECTORY_DOWN
        return context


login = bad_request_when_too_long(LoginView.as_view())
