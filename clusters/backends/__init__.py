"""Backends by Cluster.kind. To add one, see docs/adding-a-backend.md."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from .base import BackendError, ClusterBackend

if TYPE_CHECKING:
    from clusters.models import Cluster, ClusterAccount

BACKENDS: dict[str, str] = {
    "slurm": "clusters.backends.slurm.SlurmBackend",
    "slurm-rest": "clusters.backends.slurm_rest.SlurmRestBackend",
    "kubernetes": "clusters.backends.kubernetes.KubernetesBackend",
}
# The JobTemplate.backend each kind runs, where it is not the kind's own name: both SLURM kinds run batch scripts.
TEMPLATE_BACKEND = {"slurm-rest": "slurm"}


def template_backend(kind: str) -> str:
    """What templates a cluster of this kind runs (a JobTemplate.backend value)."""
    return TEMPLATE_BACKEND.get(kind, kind)


def kinds_running(template_backend_name: str) -> list[str]:
    """The cluster kinds that run templates written for `template_backend_name`."""
    wanted = template_backend(template_backend_name)
    return [kind for kind in BACKENDS if template_backend(kind) == wanted]


def backend_class(kind: str) -> type[ClusterBackend]:
    try:
        module_name, _, class_name = BACKENDS[kind].rpartition(".")
    except KeyError:
        raise BackendError(f"This portal has no backend for {kind} clusters yet.") from None
    return getattr(import_module(module_name), class_name)


def get_backend(cluster: Cluster, account: ClusterAccount | None = None) -> ClusterBackend:
    """The backend for a cluster, acting as `account` (default: the cluster's service account)."""
    account = account or cluster.service_account()
    if account is None:
        raise BackendError(
            f"The cluster “{cluster.display_name}” has no service account. An admin must add one before jobs can run."
        )
    return backend_class(cluster.kind)(cluster, account)
