"""The `slurm` kind as the registry hands it out: batch scripts submitted over SSH."""

from .. import as_student, terminal
from ..batch import BatchKind
from ..kind import ActionRefused
from .backend import SCHEDULER_ID, SlurmBackend


class SlurmKind(BatchKind):
    name = "slurm"
    backend_class = SlurmBackend
    admin_fieldsets = SlurmBackend.admin_fieldsets
    opens_terminals = True

    def missing_fields(self, cluster) -> dict[str, str]:
        return {} if cluster.host else {"host": "A SLURM cluster needs its login host."}

    def open_terminal(self, job, *, cols: int, rows: int) -> terminal.Terminal:
        """`srun --overlap --pty bash -l` in the job's allocation, as the job's identity: its own login, or the
        student's user through the service account's sudo rule (which must then allow srun)."""
        if not SCHEDULER_ID.match(job.scheduler_id or ""):
            raise ActionRefused("This job has no SLURM job number yet; open the terminal once it runs.")
        cluster = job.cluster
        account = job.account or cluster.service_account()
        argv = ["srun", f"--jobid={job.scheduler_id}", "--overlap", "--pty", "bash", "-l"]
        student = as_student.for_account(cluster, account)
        if student:
            login, argv = student.login, ["sudo", "-n", "-u", student.student, "--", *argv]
        else:
            login = account
        return terminal.open_terminal(cluster, login, argv, cols=cols, rows=rows)
