"""The `slurm` kind as the registry hands it out: batch scripts submitted over SSH."""

from ...slurm_family.batch import BatchKind
from ...slurm_family.reservations import SlurmReservations
from .backend import SlurmBackend


class SlurmKind(BatchKind):
    name = "slurm"
    label = "SLURM (over SSH)"
    backend_class = SlurmBackend
    admin_fieldsets = SlurmBackend.admin_fieldsets
    lab_holds = SlurmReservations
    sweeps_as_arrays = True  # one sbatch --array per sweep

    def missing_fields(self, cluster) -> dict[str, str]:
        return {} if cluster.host else {"host": "A SLURM cluster needs its login host."}
