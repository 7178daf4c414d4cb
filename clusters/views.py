"""The user's profile: their API token and their own cluster accounts (write-only credentials)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from courses import access

from . import services
from .choices import STUDENT_USER_MODES
from .forms import ClusterAccountForm
from .identity import cluster_username
from .models import AuthMethod, ClusterKind


@login_required
def profile(request):
    clusters = access.visible_clusters(request.user).filter(kind__in=[ClusterKind.SLURM, ClusterKind.SLURM_REST])
    clusters = clusters.exclude(run_as__in=STUDENT_USER_MODES)  # there jobs run as the admin-set cluster username
    form = ClusterAccountForm(request.POST or None, clusters=clusters)
    if request.method == "POST" and form.is_valid():
        account = form.save(commit=False)
        account.user = request.user
        existing = _registered(request.user).filter(cluster=account.cluster).first()
        if existing is not None:
            existing.username, existing.auth_method = account.username, account.auth_method
            account = existing
        services.save_account(account, secret=form.cleaned_data["secret"], actor=request.user)
        messages.success(request, f"Your jobs on {account.cluster.display_name} now run as {account.username}.")
        return redirect("profile")
    context = {
        "form": form,
        "accounts": _registered(request.user).select_related("cluster"),
        "cluster_username": cluster_username(request.user),
        "token": Token.objects.filter(user=request.user).first(),
    }  # the page shows the token masked; "Show" and "Copy" ask reveal_token for it
    return render(request, "clusters/profile.html", context, status=400 if form.errors else 200)


def _registered(user):
    """The accounts a user registered (identities through the service account are the portal's, not theirs)."""
    return user.cluster_accounts.exclude(auth_method=AuthMethod.VIA_SERVICE)


@login_required
@require_POST
def remove_account(request, account_id: int):
    account = _registered(request.user).filter(pk=account_id).select_related("cluster").first()
    if account is None:
        raise Http404("No such account.")
    services.remove_account(account, actor=request.user)
    messages.info(request, f"Removed; your jobs on {account.cluster.display_name} use the course's account again.")
    return redirect("profile")


@login_required
@require_POST
def reveal_token(request):
    """The user's own API token, for the profile page's Show and Copy buttons; never cached."""
    token = Token.objects.filter(user=request.user).first()
    if token is None:
        raise Http404("No token yet: create one on your profile page.")
    response = JsonResponse({"token": token.key})
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def new_token(request):
    replaced, _ = Token.objects.filter(user=request.user).delete()
    Token.objects.create(user=request.user)
    if replaced:
        messages.success(request, "A new API token was made; the old one no longer works.")
    else:
        messages.success(request, "Your API token was made: use it as Authorization: Token … in scripts.")
    return redirect("profile")
