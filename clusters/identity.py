"""Each user's cluster username, and the account a user's jobs run as on a cluster.

Invariant: a cluster username is a POSIX login name (`^[a-z_][a-z0-9_-]{0,31}$`), never root, a system account or a
cluster's service account, and never another portal user's: not their cluster username, not the username of an
account they registered. It is set only through `set_cluster_username` (LDAP, OIDC, roster, admin); students cannot
set their own, so a student can never make their jobs run as someone else.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from .choices import POSIX_NAME, SYSTEM_ACCOUNTS, IdentitySource, RunAs
from .models import AuthMethod, ClusterAccount, ClusterIdentity


class IdentityMissing(Exception):
    """A user has no identity this cluster's jobs could run as; the message says what to do."""


def validate_cluster_username(name: str, user=None) -> str:
    """The name as stored, or ValidationError saying why it cannot be `user`'s cluster username."""
    if not POSIX_NAME.match(name or ""):
        raise ValidationError(
            f"“{(name or '')[:40]}” is not a cluster username: use 1 to 32 lower-case letters, digits, _ or -, "
            "starting with a letter or _ (e.g. jdoe42).",
            code="invalid",
        )
    if name in SYSTEM_ACCOUNTS or name.startswith("systemd-"):
        raise ValidationError(f"“{name}” is a system account on the cluster; jobs cannot run as it.", code="system")
    if ClusterAccount.objects.filter(user__isnull=True, username=name).exists():
        raise ValidationError(f"“{name}” is a cluster's service account; jobs cannot run as it.", code="service")
    others = ClusterIdentity.objects.filter(username=name)
    accounts = ClusterAccount.objects.filter(username=name, user__isnull=False)
    accounts = accounts.exclude(auth_method=AuthMethod.VIA_SERVICE)
    if user is not None and user.pk is not None:
        others, accounts = others.exclude(user=user), accounts.exclude(user=user)
    if others.exists() or accounts.exists():
        raise ValidationError(f"“{name}” is another portal user's cluster username.", code="taken")
    return name


def set_cluster_username(user, name: str, *, source: str = IdentitySource.ADMIN, actor=None) -> ClusterIdentity:
    """Give `user` the cluster username `name` (validated), recording where it came from. Raises ValidationError.

    For sign-on: call it with the LDAP `uid` (source=IdentitySource.LDAP) or the OIDC claim (IdentitySource.OIDC)
    at each login; an unchanged name changes nothing."""
    name = (name or "").strip()
    validate_cluster_username(name, user)
    identity = ClusterIdentity.objects.filter(user=user).first() or ClusterIdentity(user=user)
    if identity.pk and identity.username == name and identity.source == source:
        return identity
    identity.username, identity.source = name, source
    identity.set_by = actor if getattr(actor, "is_authenticated", False) else None
    try:
        with transaction.atomic():
            identity.save()
    except IntegrityError:  # another user took the name between the check and the save
        raise ValidationError(f"“{name}” is another portal user's cluster username.", code="taken") from None
    return identity


def cluster_username(user) -> str:
    """The user's cluster username, or "" when none was set."""
    identity = ClusterIdentity.objects.filter(user=user).first()
    return identity.username if identity else ""


def account_for(cluster, user) -> ClusterAccount | None:
    """The account `user`'s next job on `cluster` runs as, by the cluster's run_as mode.

    service: their registered account if any, else the service account. own-account: their registered account.
    rest-user, sudo: their cluster username, reached through the service account (an identity row made here).
    None when the cluster has no service account; IdentityMissing when the mode needs what the user lacks."""
    registered = cluster.accounts.filter(user=user).exclude(auth_method=AuthMethod.VIA_SERVICE).first()
    service = cluster.service_account()
    if cluster.run_as == RunAs.SERVICE:
        return registered or service
    if cluster.run_as == RunAs.OWN_ACCOUNT:
        if registered is None:
            raise IdentityMissing(
                f"Jobs on “{cluster.display_name}” run only as each student's own cluster account. Register yours on "
                "your profile page, then launch again."
            )
        return registered
    if service is None:
        return None
    name = cluster_username(user)
    if not name:
        raise IdentityMissing(
            f"Jobs on “{cluster.display_name}” run as each student's own cluster user, and you have no cluster "
            "username yet. Ask your instructor or an admin to set it."
        )
    account, _ = ClusterAccount.objects.get_or_create(
        cluster=cluster, user=user, username=name, auth_method=AuthMethod.VIA_SERVICE
    )
    return account
