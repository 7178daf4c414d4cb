"""The `slurm` kind as the registry hands it out."""

from ..kind import Kind
from .backend import SlurmBackend


class SlurmKind(Kind):
    name = "slurm"
    templates = "slurm"
    backend_class = SlurmBackend
    admin_fieldsets = SlurmBackend.admin_fieldsets
