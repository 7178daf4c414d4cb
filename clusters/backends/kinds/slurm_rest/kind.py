"""The `slurm-rest` kind as the registry hands it out: the same batch templates as `slurm`, through slurmrestd."""

from core.choices import SessionKind

from ...kind import Rendered, RenderRefused, RenderRequest
from ...slurm_family.batch import BatchKind
from .backend import SlurmRestBackend


class SlurmRestKind(BatchKind):
    name = "slurm-rest"
    label = "SLURM (slurmrestd REST API)"
    backend_class = SlurmRestBackend
    admin_fieldsets = SlurmRestBackend.admin_fieldsets
    sweeps_as_arrays = True  # the job object's "array", with each run's files over the login node

    def missing_fields(self, cluster) -> dict[str, str]:
        return {} if cluster.api_url else {"api_url": "A SLURM REST cluster needs slurmrestd's URL."}

    def render(self, request: RenderRequest) -> Rendered:
        """As the SSH kind; a JupyterLab session only where the portal can learn where it listens (over SSH)."""
        if request.template.session == SessionKind.JUPYTERLAB and not request.cluster.host:
            raise RenderRefused(
                f"JupyterLab cannot be opened on “{request.cluster.display_name}”: the portal learns where it listens "
                "over the cluster's login node, and this cluster has none in the portal. Launch it on another cluster, "
                "or ask an admin to add the login node on the cluster's page."
            )
        return super().render(request)

    def connection_verdict(self, cluster, ok: bool) -> str:
        return (
            "slurmrestd answers; the token works for the users jobs run as"
            if ok
            else (
                "slurmrestd answers, but its token cannot act for the users jobs run as, or those users may not run "
                "students' code"
            )
        )

    def tests_over_ssh(self, cluster) -> bool:
        return bool(cluster.host)  # the login node is optional: without one, Test connection asks slurmrestd alone
