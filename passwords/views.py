"""Setting a password from an invitation, and resetting a forgotten one, for local accounts.

The reset request answers the same for every address (the same redirect, the same page, no hint): the request
only queues a task, which looks the address up and mails the accounts that have it. Requests are counted per email
address and per client address (REMOTE_ADDR, as the sign-in lockout), whether or not the address exists.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils.decorators import method_decorator
from django.views.decorators.http import require_http_methods
from django_ratelimit.core import is_ratelimited

from .mail import queue
from .tokens import invitation_tokens, reset_tokens


def local_passwords_only(view):
    """With local passwords turned off (SIGNON_LOCAL_PASSWORDS=0) nobody sets a portal password: these pages 404."""

    def wrapped(request, *args, **kwargs):
        if not getattr(settings, "SIGNON_LOCAL_PASSWORDS", True):
            raise Http404("Passwords are managed by your university's sign-in.")
        return view(request, *args, **kwargs)

    return wrapped


class ResetRequestForm(forms.Form):
    email = forms.EmailField(
        label="Email address",
        max_length=254,
        widget=forms.EmailInput(attrs={"autocomplete": "email", "autofocus": True}),
    )


def _email_key(group, request) -> str:
    return request.POST.get("email", "").strip().lower()[:254]


def _throttled(request) -> bool:
    """Count this request against its client and its address; True when either is over its hourly limit."""
    per_client = is_ratelimited(
        request, group="password-reset-client", key="ip", rate=f"{settings.PASSWORD_RESET_PER_CLIENT}/h", increment=True
    )
    per_address = is_ratelimited(
        request,
        group="password-reset-address",
        key=_email_key,
        rate=f"{settings.PASSWORD_RESET_PER_ADDRESS}/h",
        increment=True,
    )
    return per_client or per_address


@local_passwords_only
@require_http_methods(["GET", "POST"])
def reset_request(request):
    form = ResetRequestForm(request.POST or None)
    if request.method == "POST":
        if _throttled(request):
            return render(request, "passwords/reset_throttled.html", status=429)
        if form.is_valid():
            queue("send_password_reset", form.cleaned_data["email"])
            return redirect("passwords:reset_sent")
    return render(request, "passwords/reset_request.html", {"form": form}, status=400 if form.errors else 200)


@local_passwords_only
def reset_sent(request):
    hours = max(1, settings.PASSWORD_RESET_EXPIRY_SECONDS // 3600)
    return render(request, "passwords/reset_sent.html", {"hours": hours})


@method_decorator(local_passwords_only, name="dispatch")
class SetPasswordView(auth_views.PasswordResetConfirmView):
    """The page a mailed link opens: choose a password, then log in with it. An expired or used link says what to
    do next instead."""

    template_name = "passwords/set_password.html"
    success_url = reverse_lazy("login")
    kind = "invitation"

    def get_context_data(self, **kwargs):
        return super().get_context_data(**kwargs) | {"kind": self.kind}

    def form_valid(self, form):
        response = super().form_valid(form)
        messages.success(self.request, f"Your password is set. Log in as {form.user.get_username()}.")
        return response


class InvitationView(SetPasswordView):
    token_generator = invitation_tokens
    title = "Choose your password"


class ResetConfirmView(SetPasswordView):
    token_generator = reset_tokens
    title = "Choose a new password"
    kind = "reset"
