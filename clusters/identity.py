"""Each user's cluster username, and the account a user's jobs run as on a cluster.

Invariant: a cluster username is a POSIX login name (`^[a-z_][a-z0-9_-]{0,31}$`), never root, a system account, a
cluster's service account or shared user, and never another portal user's: not their cluster username, not the
username of an account they registered. It is set only through `set_cluster_username` (LDAP, OIDC, roster, admin);
students cannot set their own, so a student can never make their jobs run as someone else.

Invariant: students' jobs never run as a cluster's service account where its kind can reach another user from it
(both SLURM kinds): that account holds the sudo rule, SLURM operator level or slurmrestd token. In the shared mode
they run as the cluster's shared user (Cluster.shared_user: a POSIX name, not a system account, not the service
account, not anyone's cluster username), or not at all.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from .choices import POSIX_NAME, SYSTEM_ACCOUNTS, IdentitySource, RunAs
from .models import AuthMethod, Cluster, ClusterAccount, ClusterIdentity

# How a student gets a cluster username, said wherever one is missing (the launch page, the API, Files).
HOW_TO_GET_ONE = (
    "Ask your instructor or an admin to set it: your instructor can add it as the fourth column of the course roster "
    "(username,email,role,cluster_username), an admin under Cluster usernames; where you sign in through the campus "
    "directory it comes from there at your next sign-in."
)


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
    if Cluster.objects.filter(shared_user=name).exists():
        raise ValidationError(
            f"“{name}” is the user every student's jobs share on a cluster; it cannot be one person's.", code="shared"
        )
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


def _registered(cluster, user) -> ClusterAccount | None:
    return cluster.accounts.filter(user=user).exclude(auth_method=AuthMethod.VIA_SERVICE).first()


def missing_identity(cluster, user) -> str:
    """Why `user` cannot launch on `cluster` for want of an identity, in words that say how to get one; "" when their
    jobs have one to run as. Reads only: the launch page asks it before anyone presses Launch."""
    if cluster.run_as == RunAs.OWN_ACCOUNT:
        if _registered(cluster, user) is not None:
            return ""
        return (
            f"Jobs on “{cluster.display_name}” run only as each student's own cluster account. Register yours on "
            "your profile page (the portal makes its key; put the public half in ~/.ssh/authorized_keys on the "
            "cluster), then launch again."
        )
    if cluster.run_as == RunAs.SERVICE:
        if not cluster.uses_shared_user or cluster.shared_user or _registered(cluster, user) is not None:
            return ""
        return (
            f"Jobs on “{cluster.display_name}” cannot run yet: they would run as the cluster's service account, which "
            "holds the portal's privileges, and no separate shared user is named for students' jobs. Ask an admin to "
            "name one on the cluster's page, or to run jobs there as each student's own user."
        )
    if cluster_username(user):
        return ""
    return (
        f"Jobs on “{cluster.display_name}” run as each student's own cluster user, so that no one else can reach "
        f"your files and jobs, and you have no cluster username yet. {HOW_TO_GET_ONE}"
    )


def account_for(cluster, user) -> ClusterAccount | None:
    """The account `user`'s next job on `cluster` runs as, by the cluster's run_as mode.

    service: their registered account if any, else the cluster's shared user reached through the service account
    (an identity row made here), or the service account itself on a kind whose service account runs no code
    (Kubernetes). own-account: their registered account. rest-user, sudo: their cluster username, reached through
    the service account (an identity row made here). None when the cluster has no service account; IdentityMissing
    (missing_identity's words) when the mode needs what the user or the cluster lacks."""
    registered = _registered(cluster, user)
    service = cluster.service_account()
    if cluster.run_as == RunAs.SERVICE and (registered or not cluster.uses_shared_user):
        return registered or service
    missing = missing_identity(cluster, user)
    if missing:
        raise IdentityMissing(missing)
    if cluster.run_as == RunAs.OWN_ACCOUNT:
        return registered
    if service is None:
        return None
    name = cluster.shared_user if cluster.run_as == RunAs.SERVICE else cluster_username(user)
    account, _ = ClusterAccount.objects.get_or_create(
        cluster=cluster, user=user, username=name, auth_method=AuthMethod.VIA_SERVICE
    )
    return account


CHECKED_USERS = 500  # the most cluster usernames Test connection asks SLURM about at once


def job_users(cluster) -> list[str]:
    """The cluster users the portal names for students' code on `cluster` (what Test connection checks): its shared
    user, each student's cluster username (the first CHECKED_USERS by name), or, on a kind whose shared mode runs as
    the service account, that account. Students' own registered accounts are theirs and are not listed."""
    if cluster.uses_shared_user:
        return [cluster.shared_user] if cluster.shared_user else []
    if cluster.runs_as_student_user:
        return list(ClusterIdentity.objects.order_by("username").values_list("username", flat=True)[:CHECKED_USERS])
    service = cluster.service_account() if cluster.run_as == RunAs.SERVICE else None
    return [service.username] if service is not None else []
