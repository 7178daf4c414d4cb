"""A node's pinned SSH host key: described by its fingerprint (SHA256, as ssh-keygen prints it) and changed only by
pinning the key the node presents, after an admin has compared its fingerprint (NodeAdmin's "Check and pin")."""

from __future__ import annotations

from clusters.backends.ssh import fingerprint
from clusters.models import CredentialEvent

from .models import Node


def same_key(one: str, other: str) -> bool:
    """Whether two "type base64 [comment]" keys are the same key (the comment aside)."""
    return bool(one and other) and one.split()[:2] == other.split()[:2]


def describe_pinned(node: Node) -> str:
    own = node.host_key.strip()
    if own:
        return f"{fingerprint(own)} ({own.split()[0]})"
    pinned = node.pinned_host_key()
    if pinned:
        return f"{fingerprint(pinned)} ({pinned.split()[0]}): the cluster's pinned key, the node being its login host"
    return "Not pinned: use “Check and pin the host key” and confirm the fingerprint. The collector does not connect."


def pin(node: Node, host_key: str, *, actor) -> None:
    """Pin the key and record who pinned which fingerprint in the cluster's credential log."""
    node.host_key = host_key.strip()
    node.save(update_fields=["host_key", "updated_at"])
    CredentialEvent.objects.create(
        cluster=node.cluster,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        action=CredentialEvent.Action.HOST_KEY_PINNED,
        detail=f"node {node.name}: {fingerprint(node.host_key)}"[:255],
    )
