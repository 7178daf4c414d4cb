"""Where a SLURM job's JupyterLab listens, for both SLURM kinds (over SSH and through slurmrestd): the file its
template writes in the job's directory, checked against the nodes SLURM gave the job.

The JupyterLab template (jobs/builtin_templates/jupyterlab.yaml) writes `.jupyter-server.json` (mode 0600, as the
job's identity) with the node's hostname, the port it chose and the server's random token. The portal reads it
over the login node as the same identity (the backend's read_job_file) and reaches the node directly, as Open
OnDemand does: compute nodes must accept connections from the portal on unprivileged ports. The job's nodes come
from the backend too (job_nodes: scontrol over SSH, or slurmrestd's job record). The job runs the student's code,
so the file is not trusted: the host must be one of the nodes SLURM gave this job and the port an unprivileged one,
or the portal would proxy requests wherever a student pointed it.
"""

from __future__ import annotations

import json
import re

from .kind import ActionRefused, NotebookAddress, NotebookNotReady

CONNECTION_FILE = ".jupyter-server.json"
MAX_FILE_BYTES = 4096
HOSTNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$")
TOKEN = re.compile(r"^[A-Za-z0-9_-]{16,128}$")


def parse_connection(text: str) -> tuple[str, int, str]:
    """(host, port, token) from the connection file; ActionRefused if it is not what the template writes."""
    try:
        data = json.loads(text)
        host, port, token = str(data["host"]), int(data["port"]), str(data["token"])
    except (ValueError, KeyError, TypeError):
        raise ActionRefused(
            f"The job's {CONNECTION_FILE} is not the one the JupyterLab template writes; launch the session again."
        ) from None
    if not HOSTNAME.match(host) or not 1024 <= port <= 65535 or not TOKEN.match(token):
        raise ActionRefused(f"The job's {CONNECTION_FILE} names an address the portal will not open.")
    return host, port, token


def address(backend, job) -> NotebookAddress:
    chunk = backend.read_job_file(job.pk, CONNECTION_FILE, 0, MAX_FILE_BYTES)
    if not chunk.exists or not chunk.data.strip():
        raise NotebookNotReady("JupyterLab is starting on the node; this takes a few seconds. Try again shortly.")
    host, port, token = parse_connection(chunk.data)
    nodes = backend.job_nodes(job.scheduler_id)
    if host not in nodes and host.split(".")[0] not in nodes:
        raise ActionRefused(
            f"The job's JupyterLab says it listens on {host}, which is not a node of this job ({', '.join(nodes)})."
        )
    return NotebookAddress(url=f"http://{host}:{port}", token=token)
