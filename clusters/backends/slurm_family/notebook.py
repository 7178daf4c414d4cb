"""Where a SLURM job's JupyterLab listens, for both SLURM kinds (over SSH and through slurmrestd), and how its job
gets the portal's token.

The job runs the student's code, so nothing it writes decides where the portal connects or what it sends:
- the token is the portal's (jobs/session_tokens.py). The kind hands it to the job outside the script and the run
  directory: in the job's environment through slurmrestd, or over SSH as a 0600 file `session.env` in the session's
  private runtime directory `<lab directory>/.gpulab-runtime/<job id>/` (0700), which the job reads and deletes.
  JupyterLab keeps its own runtime files there too (jpserver-*.json, kernel connection files); Files never serves
  that directory (sessions/secret_files.py);
- the host is the scheduler's: the job's first node (where its batch script and so JupyterLab run) at the address
  SLURM records for it (NodeAddr), whatever name the job wrote;
- the port is the only thing read from the job: its template picks a free port in GPULAB_NOTEBOOK_PORTS and writes
  it to `.gpulab-notebook.json` in the run directory; a port outside that range, or one of the portal's own services
  (its database, Redis, web server, the cluster's SSH and slurmrestd, GPULAB_NOTEBOOK_DENIED_PORTS), is refused.
The portal then reaches the node directly, as Open OnDemand does: compute nodes must accept connections from the
portal on that range.
"""

from __future__ import annotations

import json
import posixpath
import re
from urllib.parse import urlsplit

from django.conf import settings

from ..kind import ActionRefused, NotebookAddress, NotebookNotReady
from ..ssh import makedirs

PORT_FILE = ".gpulab-notebook.json"
RUNTIME_DIR = ".gpulab-runtime"  # under the lab directory, beside jobs/: one 0700 folder per session
SESSION_FILE = "session.env"
MAX_FILE_BYTES = 4096
NODE_ADDRESS = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9.-]{0,252}|[0-9A-Fa-f:.]{2,45})$")
SAFE_VALUE = re.compile(r"^[A-Za-z0-9_ -]*$")


def runtime_dir(lab_dir: str, job_id) -> str:
    """The session's private runtime directory, as a path under `lab_dir` (the backend's own form of it)."""
    return posixpath.join(lab_dir, RUNTIME_DIR, str(job_id))


def _service_ports(cluster) -> set[int]:
    """The ports of what the portal itself talks to, from its settings and the cluster's row."""
    urls = [settings.PORTAL_URL, getattr(settings, "REDIS_URL", ""), getattr(settings, "TELEMETRY_REDIS_URL", "")]
    urls += [getattr(settings, "CELERY_BROKER_URL", ""), getattr(cluster, "api_url", "") or ""]
    ports = {int(db["PORT"]) for db in settings.DATABASES.values() if str(db.get("PORT") or "").isdigit()}
    for url in urls:
        try:
            parts = urlsplit(url)
            port = parts.port or {"http": 80, "https": 443, "redis": 6379, "rediss": 6379}.get(parts.scheme)
        except ValueError:
            continue
        if port:
            ports.add(port)
    if getattr(cluster, "port", None):
        ports.add(int(cluster.port))
    return ports


def denied_ports(cluster) -> frozenset[int]:
    """Ports the proxy never opens, even inside the range: the portal's own services and the configured list."""
    return frozenset(settings.GPULAB_NOTEBOOK_DENIED_PORTS | _service_ports(cluster))


def session_environment(cluster, token: str) -> dict[str, str]:
    """What the job's template reads: the portal's token and the ports it may listen on (the range, less the denied
    ports inside it)."""
    low, high = settings.GPULAB_NOTEBOOK_PORTS
    inside = sorted(p for p in denied_ports(cluster) if low <= p <= high)
    return {
        "GPULAB_SESSION_TOKEN": token,
        "GPULAB_SESSION_PORTS": f"{low}-{high}",
        "GPULAB_SESSION_PORTS_EXCEPT": " ".join(str(p) for p in inside),
    }


def session_file(cluster, token: str) -> str:
    """session.env: KEY=value lines the template reads with `read` (never sourced), values of safe characters only."""
    environment = session_environment(cluster, token)
    if not all(SAFE_VALUE.match(value) for value in environment.values()):
        raise ActionRefused("The session's token is not one the portal makes; launch the session again.")
    return "".join(f"{key}={value}\n" for key, value in environment.items())


def write_session_file(sftp, runtime: str, text: str) -> None:
    """`text` as runtime/session.env over an SFTP channel of the job's identity: the folder 0700, the file 0600 before
    a byte is written."""
    makedirs(sftp, runtime, mode=0o700)
    sftp.chmod(runtime, 0o700)
    with sftp.open(posixpath.join(runtime, SESSION_FILE), "w") as fh:
        fh.chmod(0o600)
        fh.write(text)


def parse_port(text: str, cluster) -> int:
    """The port the job reports; ActionRefused if it is not in the range or is one of the portal's services."""
    try:
        port = int(json.loads(text)["port"])
    except (ValueError, KeyError, TypeError):
        raise ActionRefused(
            f"The job's {PORT_FILE} is not the one the JupyterLab template writes; launch the session again."
        ) from None
    low, high = settings.GPULAB_NOTEBOOK_PORTS
    if not low <= port <= high or port in denied_ports(cluster):
        raise ActionRefused(
            f"The job's JupyterLab says it listens on port {port}; the portal opens sessions only on ports "
            f"{low} to {high} that none of its own services use. Launch the session again."
        )
    return port


def node_address(backend, scheduler_id: str) -> str:
    """Where the job's first node answers, as SLURM records it (NodeAddr); never a name the job wrote."""
    nodes = backend.job_nodes(scheduler_id)
    if not nodes:
        raise NotebookNotReady("JupyterLab is waiting for its node; try again in a few seconds.")
    address = next((n.address for n in backend.nodes() if n.name == nodes[0]), "")
    if not NODE_ADDRESS.match(address):
        raise ActionRefused(f"SLURM gives no usable address for the node {nodes[0]} of this job.")
    return f"[{address}]" if ":" in address else address


def address(backend, job) -> NotebookAddress:
    """The job's JupyterLab: the scheduler's node address and the reported port. The token is the portal's, added by
    sessions/notebook.py from the job's row."""
    chunk = backend.read_job_file(job.pk, PORT_FILE, 0, MAX_FILE_BYTES)
    if not chunk.exists or not chunk.data.strip():
        raise NotebookNotReady("JupyterLab is starting on the node; this takes a few seconds. Try again shortly.")
    port = parse_port(chunk.data, job.cluster)
    return NotebookAddress(url=f"http://{node_address(backend, job.scheduler_id)}:{port}", token="")
