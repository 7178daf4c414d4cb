"""How long a username and a password given at sign-in may be, checked before anything else sees them.

django-axes records every failed sign-in in a row whose username column holds 255 characters: a 300 KB username
made PostgreSQL refuse that row (a 500), and on any database it reached the lockout's queries and the campus
directory's bind. So every sign-in that counts towards the lockout (the login page, the admin's login page,
POST /api/v1/token/) refuses a username or a password past these lengths with a 400 that says so, before
authenticate() runs: no attempt is recorded, no directory is asked.
"""

from __future__ import annotations

from functools import wraps

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator
from django.http import QueryDict

USERNAME_MAX = 150  # Django's User.username (LDAP and local accounts alike)
PASSWORD_MAX = 4096  # far above any passphrase; a directory bind or a hash need never see more
TOO_LONG = "max_length"
MESSAGES = {
    "username": f"A username is at most {USERNAME_MAX} characters long; nobody was signed in.",
    "password": f"A password is at most {PASSWORD_MAX} characters long; nobody was signed in.",
}
LIMITS = {"username": USERNAME_MAX, "password": PASSWORD_MAX}


class BoundedCredentials(forms.Form):
    """Mixed in before a sign-in form (AuthenticationForm or the admin's): its username and password are refused past
    their lengths (then authenticate() is not called: AuthenticationForm.clean asks only with both fields valid)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for name, limit in LIMITS.items():
            field = self.fields[name]
            assert isinstance(field, forms.CharField), "a sign-in form's username and password are text fields"
            field.max_length = limit
            field.validators.append(MaxLengthValidator(limit, message=MESSAGES[name]))

    def full_clean(self) -> None:
        super().full_clean()
        if too_long(self):  # the page comes back without the over-long text in it
            data = QueryDict(mutable=True)
            data.update(self.data)
            for name in LIMITS:
                if self.has_error(name, TOO_LONG):
                    data[self.add_prefix(name)] = ""
            self.data = data


class LoginForm(BoundedCredentials, AuthenticationForm):
    pass


class AdminLoginForm(BoundedCredentials, AdminAuthenticationForm):
    pass


def too_long(form) -> bool:
    return form.is_bound and any(form.has_error(name, TOO_LONG) for name in LIMITS)


def bad_request_when_too_long(view):
    """The login page as it is, answered with 400 when a field was too long (admin.site.login renders it)."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        form = (getattr(response, "context_data", None) or {}).get("form")
        if form is not None and too_long(form):
            response.status_code = 400
        return response

    return wrapped


class PasswordLengthValidator:
    """AUTH_PASSWORD_VALIDATORS: no password is set that its owner could not sign in with."""

    def validate(self, password: str, user=None) -> None:
        if len(password) > PASSWORD_MAX:
            raise ValidationError(f"A password is at most {PASSWORD_MAX} characters long.", code="password_too_long")

    def get_help_text(self) -> str:
        return f"Your password can be at most {PASSWORD_MAX} characters long."
