"""What a cluster kind is, as the rest of the portal sees it: one object per kind, found by `Cluster.kind`.

A kind bundles everything the portal must know about one sort of cluster: its scheduler backend, which templates
it runs and the admin fields it needs. `jobs`, `courses` and `telemetry` hold a Kind and call it; they never ask
which kind it is. Each kind's package under clusters/backends/<kind>/ defines a subclass; clusters/kinds.py lists
them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from .base import ClusterBackend


class Kind:
    """The defaults are a SLURM-like batch kind's: override what differs."""

    name: ClassVar[str] = ""
    # The JobTemplate.backend this kind runs: kinds that run the same templates share one name.
    templates: ClassVar[str] = ""
    backend_class: type[ClusterBackend]
    # Cluster fields the admin shows for this kind: ((title, {"fields": [...]}), ...).
    admin_fieldsets: ClassVar[tuple] = ()

    def __repr__(self) -> str:
        return f"<Kind {self.name}>"
