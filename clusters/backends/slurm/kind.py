"""The `slurm` kind as the registry hands it out: batch scripts submitted over SSH."""

from ..batch import BatchKind
from ..kind import ActionRefused, NotebookAddress
from . import notebook
from .backend import SCHEDULER_ID, SlurmBackend


class SlurmKind(BatchKind):
    name = "slurm"
    label = "SLURM (over SSH)"
    backend_class = SlurmBackend
    admin_fieldsets = SlurmBackend.admin_fieldsets
    holds_lab_sessions = True

    def missing_fields(self, cluster) -> dict[str, str]:
        return {} if cluster.host else {"host": "A SLURM cluster needs its login host."}

    def notebook_address(self, job) -> NotebookAddress:
        """The node and port the job's JupyterLab wrote, checked against the nodes SLURM gave the job."""
        if not SCHEDULER_ID.match(job.scheduler_id or ""):
            raise ActionRefused("This job has no SLURM job number yet; open JupyterLab once it runs.")
        return notebook.address(self.backend(job.cluster, job.account), job)
