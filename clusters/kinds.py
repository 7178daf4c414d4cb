"""The registry of cluster kinds: `Cluster.kind` → the Kind that knows that sort of cluster.

Each kind lives in its own package under clusters/backends/<kind>/ and is named here once, by dotted path, so a
kind's code is imported only when a cluster of that kind is used. Nothing outside this module and the kind
packages names a kind. To add one, see docs/adding-a-backend.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .choices import STUDENT_USER_MODES, RunAs
from .errors import BackendError

if TYPE_CHECKING:
    from .backends.base import ClusterBackend
    from .backends.kind import Kind

KINDS: dict[str, str] = {
    "slurm": "clusters.backends.kinds.slurm.kind.SlurmKind",
    "slurm-rest": "clusters.backends.kinds.slurm_rest.kind.SlurmRestKind",
    "kubernetes": "clusters.backends.kinds.kubernetes.kind.KubernetesKind",
}
_loaded: dict[str, Kind] = {}


def register(name: str, path: str) -> None:
    """Name a kind by the dotted path of its Kind class (a site plug-in, or a test's fake kind)."""
    KINDS[name] = path
    _loaded.pop(name, None)


def unregister(name: str) -> None:
    KINDS.pop(name, None)
    _loaded.pop(name, None)


def kind_of(name: str) -> Kind:
    """The Kind registered as `name`, or BackendError naming the kind this portal cannot run."""
    if name not in _loaded:
        try:
            module_name, _, class_name = KINDS[name].rpartition(".")
        except KeyError:
            raise BackendError(f"This portal has no backend for {name} clusters yet.") from None
        _loaded[name] = getattr(import_module(module_name), class_name)()
    return _loaded[name]


def names() -> list[str]:
    return list(KINDS)


def template_backend(name: str) -> str:
    """What templates a cluster of this kind runs (a JobTemplate.backend value)."""
    return kind_of(name).templates if name in KINDS else name


def kinds_running(template_backend_name: str) -> list[str]:
    """The cluster kinds that run templates written for `template_backend_name`."""
    wanted = template_backend(template_backend_name)
    return [name for name in KINDS if template_backend(name) == wanted]


def choices() -> list[tuple[str, str]]:
    """Cluster.kind's choices: every registered kind with its label. Fields take this callable, not its answer, so a
    new kind needs no migration."""
    return [(name, kind_of(name).label) for name in KINDS]


def template_choices() -> list[tuple[str, str]]:
    """JobTemplate.backend's choices: the kinds that run templates of their own (slurm-rest runs slurm's)."""
    return [(name, label) for name, label in choices() if template_backend(name) == name]


def default() -> str:
    """The kind a new cluster starts as: the first registered."""
    return next(iter(KINDS))


def default_run_as(name: str) -> str:
    """Whose identity a new cluster of this kind runs jobs under: each student's own cluster user where the kind can
    name it itself (sudo, slurmrestd), else the kind's first mode (Kubernetes: its one, with a namespace per student
    on the course)."""
    modes = backend_class(name).run_as_modes if name in KINDS else (RunAs.SERVICE,)
    return next((mode for mode in modes if mode in STUDENT_USER_MODES), modes[0])


def default_templates() -> str:
    """What a new template is written for: what the default kind runs."""
    return template_backend(default())


def names_where(capability: str) -> list[str]:
    """The registered kinds whose Kind has `capability` set (e.g. "student_logins")."""
    return [name for name in KINDS if getattr(kind_of(name), capability)]


def backend_class(name: str) -> type[ClusterBackend]:
    return kind_of(name).backend_class


def get_backend(cluster: Any, account: Any = None) -> ClusterBackend:
    """The backend for a cluster, acting as `account` (default: the cluster's service account)."""
    return kind_of(cluster.kind).backend(cluster, account)
