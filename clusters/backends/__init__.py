"""Scheduler backends, one package per cluster kind under kinds/ (slurm/, slurm_rest/, kubernetes/), and what they
share: the interface and errors (base.py), the Kind (kind.py) and SSH (ssh.py). What both SLURM kinds share is the
SLURM family's wing, slurm_family/.

The registry that finds a kind by `Cluster.kind` is clusters/kinds.py; to add a kind, see docs/adding-a-backend.md.
"""

from .base import BackendError, ClusterBackend

__all__ = ["BackendError", "ClusterBackend"]
