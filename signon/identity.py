"""The campus's name for a person on the clusters (the LDAP `uid`, or a configured OIDC claim), kept at sign-in.

A name the cluster-identity rules refuse (not a POSIX name, root, a system or service account, another user's)
leaves the user's cluster username as it was and is logged for the admin; the sign-in itself goes on.
"""

from __future__ import annotations

import logging

from django.core.exceptions import ValidationError

from clusters.identity import set_cluster_username

log = logging.getLogger(__name__)


def record_cluster_username(user, value, source: str) -> None:
    if isinstance(value, list | tuple):
        value = value[0] if value else None
    if not value:
        return
    try:
        set_cluster_username(user, str(value), source=source)
    except ValidationError as exc:
        log.warning("campus cluster username of %s not kept: %s", user.get_username(), " ".join(exc.messages))
