"""The `slurm-rest` kind as the registry hands it out: it runs the same batch templates as `slurm`."""

from ..kind import Kind
from .backend import SlurmRestBackend


class SlurmRestKind(Kind):
    name = "slurm-rest"
    templates = "slurm"
    backend_class = SlurmRestBackend
    admin_fieldsets = SlurmRestBackend.admin_fieldsets
