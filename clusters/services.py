"""Credential and host-key changes, each recorded as a CredentialEvent (never with the secret)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from .backends import ssh
from .models import Cluster, ClusterAccount, CredentialEvent


def _event(account: ClusterAccount, action: str, actor, detail: str = "") -> None:
    CredentialEvent.objects.create(
        cluster=account.cluster,
        account_username=account.username,
        account_owner=account.user.username if account.user_id else "(service account)",
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        action=action,
        detail=detail,
    )


@transaction.atomic
def save_account(account: ClusterAccount, *, secret: str | None, actor, api_token: str | None = None) -> ClusterAccount:
    """Save the account; a non-empty `secret` (or `api_token`) replaces the stored one, an empty one keeps it."""
    is_new = account.pk is None
    if secret:
        account.set_secret(secret)
    if api_token:
        from .backends import tokens

        account.set_api_token(api_token.strip(), tokens.expires_at(api_token))
    account.save()
    if is_new:
        _event(account, CredentialEvent.Action.SET, actor)
    elif secret:
        _event(account, CredentialEvent.Action.CHANGED, actor)
    if api_token and not is_new:
        _event(account, CredentialEvent.Action.CHANGED, actor, detail="slurmrestd token")
    return account


@transaction.atomic
def remove_account(account: ClusterAccount, *, actor) -> None:
    _event(account, CredentialEvent.Action.REMOVED, actor)
    account.delete()


@transaction.atomic
def pin_host_key(cluster: Cluster, host_key: str, *, actor) -> None:
    cluster.host_key = host_key.strip()
    cluster.host_key_pinned_at = timezone.now()
    cluster.save(update_fields=["host_key", "host_key_pinned_at", "updated_at"])
    CredentialEvent.objects.create(
        cluster=cluster,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        action=CredentialEvent.Action.HOST_KEY_PINNED,
        detail=ssh.fingerprint(cluster.host_key),
    )


def rotate_all(*, actor=None) -> int:
    """Re-encrypt every stored secret under the newest CREDENTIAL_KEYS key."""
    from . import crypto

    count = 0
    stored = ClusterAccount.objects.exclude(secret_encrypted="", api_token_encrypted="")
    for account in stored.select_related("cluster", "user"):
        with transaction.atomic():
            ClusterAccount.objects.filter(pk=account.pk).update(
                secret_encrypted=crypto.rotate(account.secret_encrypted) if account.secret_encrypted else "",
                api_token_encrypted=crypto.rotate(account.api_token_encrypted) if account.api_token_encrypted else "",
            )
            _event(account, CredentialEvent.Action.ROTATED, actor)
        count += 1
    return count


def save_connection_facts(cluster: Cluster, report) -> None:
    """Keep what Test connection learnt (accounting, partition limits, Kubernetes features) on the cluster."""
    fields = {k: v for k, v in report.facts.items() if getattr(cluster, k) != v}
    if report.has_accounting is not None and report.has_accounting != cluster.has_accounting:
        fields["has_accounting"] = report.has_accounting
    if "partition_limits" in report.facts:
        fields["partition_limits_at"] = timezone.now()
    if fields:
        Cluster.objects.filter(pk=cluster.pk).update(**fields)
        for name, value in fields.items():
            setattr(cluster, name, value)


def refresh_partition_limits(cluster: Cluster) -> bool:
    """Ask the scheduler (one call) what each partition can give a job and keep it; False where the kind has no
    partitions. Scheduler errors propagate (BackendError): the limits learnt before stay."""
    from .backends.base import NotSupported
    from .kinds import get_backend

    try:
        limits = get_backend(cluster).partition_limits()
    except NotSupported:
        return False
    cluster.partition_limits = {name: p.as_dict() for name, p in limits.items()}
    cluster.partition_limits_at = timezone.now()
    Cluster.objects.filter(pk=cluster.pk).update(
        partition_limits=cluster.partition_limits, partition_limits_at=cluster.partition_limits_at
    )
    return True
