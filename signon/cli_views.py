"""The browser half of signing a command-line client in (signon/cli_login.py): the user types the code their
terminal shows, sees which client asks, and confirms or refuses."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from . import cli_login

WRONG_CODES_ALLOWED = 10  # per user and 10 minutes: codes are not to be guessed from a signed-in account either
WRONG_CODES_WINDOW = 600


@login_required
@require_http_methods(["GET", "POST"])
def cli_login_page(request):
    context: dict = {"minutes": int(cli_login.LIFETIME.total_seconds() // 60)}
    if request.method == "GET":
        return render(request, "signon/cli_login.html", context)
    # Counted before the code is looked up, so that tries sent at once cannot all pass the check first.
    tries_key = f"gpulab:cli-login:tries:{request.user.pk}"
    cache.add(tries_key, 0, WRONG_CODES_WINDOW)
    if cache.incr(tries_key) > WRONG_CODES_ALLOWED:
        context["error"] = "Too many wrong codes: wait ten minutes, then run `gpulab login` again."
        return render(request, "signon/cli_login.html", context, status=429)
    code = str(request.POST.get("code", ""))[:32]
    login = cli_login.waiting(code)
    if login is None:
        context["error"] = (
            f"No sign-in is waiting with the code {code.strip() or '(empty)'}. Check it against your terminal; "
            f"codes last {context['minutes']} minutes, so an older one needs `gpulab login` again."
        )
        return render(request, "signon/cli_login.html", context, status=400)
    cache.decr(tries_key)  # a code that is waiting is no wrong try
    action = request.POST.get("action")
    if action == "confirm":
        done = cli_login.confirm(login, request.user)
        return render(request, "signon/cli_login_done.html", {"confirmed": done, "client": login.client})
    if action == "refuse":
        cli_login.refuse(login)
        return render(request, "signon/cli_login_done.html", {"confirmed": False, "client": login.client})
    started_ago = int((timezone.now() - login.created_at).total_seconds())
    context |= {
        "login": login,
        "code": cli_login.shown(login.user_code),
        "started_ago": started_ago,
        "elsewhere": login.address is not None and login.address != request.META.get("REMOTE_ADDR"),
    }
    return render(request, "signon/cli_login.html", context)
