"""The user's profile: their API token, their cluster username and their own cluster accounts, whose SSH keys the
portal generates (the private key stored encrypted, never shown; the public key shown to install on the cluster)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from . import access, kinds, services
from .backends import BackendError, ssh
from .choices import STUDENT_USER_MODES
from .forms import OwnAccountForm
from .identity import cluster_username
from .models import AuthMethod, ClusterAccount


@login_required
def profile(request):
    clusters = access.visible_clusters(request.user).filter(kind__in=kinds.names_where("student_logins"))
    clusters = clusters.exclude(run_as__in=STUDENT_USER_MODES)  # there jobs run as the admin-set cluster username
    form = OwnAccountForm(request.POST or None, clusters=clusters, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        account = _registered(request.user).filter(cluster=data["cluster"]).first()
        account = account or ClusterAccount(cluster=data["cluster"], user=request.user)
        account.username = data["username"]
        if data["auth_method"] == OwnAccountForm.GENERATED_KEY:
            services.generate_key(account, actor=request.user)
            messages.success(
                request,
                f"A key was made for {account.username} on {account.cluster.display_name}. Add its public key "
                "(below) to ~/.ssh/authorized_keys there, then press Test login.",
            )
        else:
            account.auth_method = AuthMethod.PASSWORD
            services.save_account(account, secret=data["secret"], actor=request.user)
            messages.success(request, f"Your jobs on {account.cluster.display_name} now run as {account.username}.")
        return redirect("profile")
    context = {
        "form": form,
        "accounts": _registered(request.user).select_related("cluster"),
        "cluster_username": cluster_username(request.user),
        "token": Token.objects.filter(user=request.user).first(),
    }  # the page shows the token masked; "Show" and "Copy" ask reveal_token for it
    return render(request, "clusters/profile.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def new_key(request, account_id: int):
    account = _own_account(request.user, account_id)
    services.generate_key(account, actor=request.user)
    messages.success(
        request,
        f"A new key was made for {account.username}; the old one is no longer used. Replace it in "
        "~/.ssh/authorized_keys on the cluster, then press Test login.",
    )
    return redirect("profile")


@login_required
@require_POST
def test_login(request, account_id: int):
    """Log in as the account once, so the student knows the key is in place before a job needs it."""
    account = _own_account(request.user, account_id)
    if not account.cluster.host:
        messages.error(request, f"{account.cluster.display_name} has no SSH login node; ask an admin.")
        return redirect("profile")
    try:
        ssh.pool.discard(account.cluster, account)  # a fresh login: the key may have just been installed
        ssh.run(account.cluster, account, ["true"])
    except BackendError as exc:
        messages.error(request, f"Login as {account.username} failed: {exc}")
    else:
        messages.success(request, f"Logged in as {account.username} on {account.cluster.display_name}: it works.")
    return redirect("profile")


def _own_account(user, account_id: int) -> ClusterAccount:
    account = _registered(user).filter(pk=account_id).select_related("cluster").first()
    if account is None:
        raise Http404("No such account.")
    return account


def _registered(user):
    """The accounts a user registered (identities through the service account are the portal's, not theirs)."""
    return user.cluster_accounts.exclude(auth_method=AuthMethod.VIA_SERVICE)


@login_required
@require_POST
def remove_account(request, account_id: int):
    account = _own_account(request.user, account_id)
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
