"""The `slurm` kind as the registry hands it out: batch scripts submitted over SSH."""

from ..batch import BatchKind
from .backend import SlurmBackend


class SlurmKind(BatchKind):
    name = "slurm"
    backend_class = SlurmBackend
    admin_fieldsets = SlurmBackend.admin_fieldsets
