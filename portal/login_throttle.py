"""What a locked-out sign-in is told, on the login page and at /api/v1/token/.

django-axes counts failed sign-ins per username and per client address (settings "Sign-in lockout"); once
either reaches the limit, every try for that username or from that address is refused until the lockout
expires or an admin unlocks it. The answer says how long, and who can help, without saying whether the
password was right.
"""

from __future__ import annotations

import math

from axes.helpers import get_client_ip_address, get_cool_off
from axes.models import AccessAttempt
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Max, Q
from django.shortcuts import render
from django.utils import timezone

from signon.views import sign_in_context


def minutes_left(request, username: str) -> int:
    """Whole minutes until the lockout of `username` or of the client's address ends (at least 1)."""
    cool_off = get_cool_off(request)
    if cool_off is None:
        return 1
    address = getattr(request, "axes_ip_address", None) or get_client_ip_address(request)
    since = timezone.now() - cool_off
    last = (
        AccessAttempt.objects.filter(Q(username=username) | Q(ip_address=address), attempt_time__gte=since)
        .aggregate(last=Max("attempt_time"))
        .get("last")
    )
    left = (last + cool_off - timezone.now()).total_seconds() if last else 0
    return max(1, math.ceil(left / 60))


def lockout_message(request, username: str) -> str:
    minutes = minutes_left(request, username)
    unit = "minute" if minutes == 1 else "minutes"
    return (
        "Too many failed sign-ins for this account or from this address; "
        f"try again in {minutes} {unit} or ask an admin to unlock it."
    )


def lockout_response(request, original_response=None, credentials=None):
    """The login page again, with the lockout in words instead of the password error (HTTP 429)."""
    username = request.POST.get("username", "") if request.method == "POST" else ""
    form = AuthenticationForm(request, initial={"username": username})
    context = {"form": form, "lockout": lockout_message(request, username), "next": request.POST.get("next", "")}
    context.update(sign_in_context())
    return render(request, "registration/login.html", context, status=429)
