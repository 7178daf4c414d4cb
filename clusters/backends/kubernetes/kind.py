"""The `kubernetes` kind as the registry hands it out."""

from ..kind import Kind
from .backend import KubernetesBackend


class KubernetesKind(Kind):
    name = "kubernetes"
    templates = "kubernetes"
    backend_class = KubernetesBackend
    admin_fieldsets = KubernetesBackend.admin_fieldsets
