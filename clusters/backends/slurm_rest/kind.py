"""The `slurm-rest` kind as the registry hands it out: the same batch templates as `slurm`, through slurmrestd."""

from ..batch import BatchKind
from .backend import SlurmRestBackend


class SlurmRestKind(BatchKind):
    name = "slurm-rest"
    label = "SLURM (slurmrestd REST API)"
    backend_class = SlurmRestBackend
    admin_fieldsets = SlurmRestBackend.admin_fieldsets

    def missing_fields(self, cluster) -> dict[str, str]:
        return {} if cluster.api_url else {"api_url": "A SLURM REST cluster needs slurmrestd's URL."}

    def connection_verdict(self, cluster, ok: bool) -> str:
        return (
            "slurmrestd answers; the token works for the users jobs run as"
            if ok
            else ("slurmrestd answers, but its token cannot act for the users jobs run as")
        )

    def tests_over_ssh(self, cluster) -> bool:
        return bool(cluster.host)  # the login node is optional: without one, Test connection asks slurmrestd alone
