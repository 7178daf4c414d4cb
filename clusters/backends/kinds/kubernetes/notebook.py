"""Where a Kubernetes job's JupyterLab answers the portal: the API server's service proxy to the job's Service.

The JupyterLab template (jobs/builtin_templates/k8s-jupyterlab.yaml) runs the server in a Deployment behind a
Service, with --ServerApp.base_url set to the portal's own path for it, and its token in the Secret the backend made
at submit (`<job_name>-session`, never in the job's script). The portal reaches it as
`<API server>/api/v1/namespaces/<ns>/services/<service>:<port>/proxy/jobs/<id>/lab/…` with the cluster's
credentials (a bearer token, or the kubeconfig's client certificate, presented from the files the official client
wrote it to), so no pod port has to be open to the portal. Two things differ from a server reached directly:
- the API server takes the Authorization header for itself (and drops it), so Jupyter's token travels as the
  `token` query parameter, which Jupyter accepts as well;
- the API server rewrites absolute links in HTML pages and Location headers to go through its proxy path; the portal
  takes that prefix out again (`rewritten_prefix`), so the browser keeps asking the portal's own path.
Only the Service and the Secret that carry this job's label are used, whatever the job's script says.

A RayJob's Ray dashboard is reached the same way (dashboard_route), at its Ray head's service on port 8265, which
serves from its root and needs no token (ray.py says which service that is and why no other).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from pathlib import Path

from ...base import BackendError
from ...kind import ActionRefused
from . import ray
from .api import KINDS
from .backend import SERVICE, KubernetesBackend, labels, name_of, split_id
from .manifests import LABEL_JOB, SESSION_SECRET_SUFFIX

SECRET = KINDS[("v1", "Secret")]
TOKEN = re.compile(r"^[A-Za-z0-9_-]{16,128}$")


class NotReady(ActionRefused):
    """The job runs, but its JupyterLab pod is not ready to answer yet."""


@dataclass(frozen=True)
class ServiceRoute:
    """How the portal's proxy reaches the server: `url` + the request's own path, with `headers` added, the Jupyter
    token as a query parameter, TLS checked against `ca_pem`, the client certificate in `cert_file`/`key_file`
    presented (when the kubeconfig signs in with one), and `rewritten_prefix` taken out of pages."""

    url: str
    token: str
    headers: dict[str, str]
    ca_pem: str
    rewritten_prefix: str
    cert_file: str = ""
    key_file: str = ""


def _ready(pod: dict) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _service(backend: KubernetesBackend, namespace: str, job_uuid: str) -> tuple[str, int]:
    services = backend.api.list(SERVICE.collection(namespace), f"{LABEL_JOB}={job_uuid}")
    services = [s for s in services if labels(s).get(LABEL_JOB) == job_uuid]
    if not services:
        raise ActionRefused("This job has no Service to reach JupyterLab through; launch the JupyterLab template.")
    ports = (services[0].get("spec") or {}).get("ports") or []
    port = next((p for p in ports if p.get("name") == "http"), ports[0] if ports else None)
    if port is None:
        raise ActionRefused("The job's Service has no port for JupyterLab.")
    return name_of(services[0]), int(port["port"])


def _token(backend: KubernetesBackend, namespace: str, job_uuid: str) -> str:
    secret = backend.api.get(SECRET.item(namespace, f"gpulab-{job_uuid[:8]}{SESSION_SECRET_SUFFIX}"))
    try:
        token = base64.b64decode((secret.get("data") or {}).get("token", "")).decode()
    except (binascii.Error, UnicodeDecodeError):
        token = ""
    if labels(secret).get(LABEL_JOB) != job_uuid or not TOKEN.match(token):
        raise ActionRefused("The job's JupyterLab token is missing or not the portal's; launch the session again.")
    return token


@dataclass(frozen=True)
class _Connection:
    host: str
    headers: dict[str, str]
    ca_pem: str
    cert_file: str
    key_file: str


def _connection(backend: KubernetesBackend) -> _Connection:
    """The API server's URL and what authenticates the portal to it, as the official client has them: a bearer
    token (header), a client certificate (the files the client wrote from the kubeconfig: paths, never their
    contents), or both; and the CA the server is checked against."""
    config = backend.api.client.configuration
    auth = (config.auth_settings().get("BearerToken") or {}).get("value") or ""
    ca_pem = config.ca_cert_data or (Path(config.ssl_ca_cert).read_text() if config.ssl_ca_cert else "")
    return _Connection(
        host=config.host.rstrip("/"),
        headers={"Authorization": auth} if auth else {},
        ca_pem=ca_pem if isinstance(ca_pem, str) else ca_pem.decode(),
        cert_file=config.cert_file or "",
        key_file=config.key_file or "",
    )


def route(job) -> ServiceRoute:
    """Where the running job's JupyterLab answers; NotReady while its pod starts."""
    if not job.scheduler_id:
        raise NotReady("JupyterLab has not been submitted yet; it opens once the job runs.")
    backend = KubernetesBackend(job.cluster, job.account)
    namespace, job_uuid = split_id(job.scheduler_id)
    if not any(_ready(pod) for pod in backend.pods(job.scheduler_id, role="")):
        raise NotReady("JupyterLab is starting in its pod (pulling the image can take a few minutes). Try again soon.")
    service, port = _service(backend, namespace, job_uuid)
    token = _token(backend, namespace, job_uuid)
    api = _connection(backend)
    path = f"{SERVICE.item(namespace, f'{service}:{port}')}/proxy"
    if not api.host.startswith(("https://", "http://")):
        raise BackendError(f"The API server address {api.host!r} is not a URL.")
    return ServiceRoute(
        url=api.host + path,
        token=token,
        headers=api.headers,
        ca_pem=api.ca_pem,
        rewritten_prefix=path,
        cert_file=api.cert_file,
        key_file=api.key_file,
    )


# -- a RayJob's Ray dashboard -----------------------------------------------------------------------------------
def dashboard_route(job) -> ServiceRoute:
    """Where the running job's Ray dashboard answers the portal; NotReady while its Ray cluster starts."""
    if not job.scheduler_id:
        raise NotReady("The Ray dashboard opens once the job's Ray cluster runs.")
    backend = KubernetesBackend(job.cluster, job.account)
    namespace, job_uuid = split_id(job.scheduler_id)
    rayjob = backend.rayjob(namespace, job_uuid)
    if rayjob is None:
        raise ActionRefused("This job runs no RayJob, so it has no Ray dashboard.")
    status = rayjob.get("status") or {}
    cluster, address = status.get("rayClusterName", ""), status.get("dashboardURL", "")
    if status.get("jobDeploymentStatus") not in {"Initializing", "Running", "Waiting"} or not address:
        raise NotReady("The Ray cluster is starting; its dashboard opens once its head is ready. Try again soon.")
    service = ray.HEAD_SERVICE.format(cluster=cluster)
    if not cluster.startswith(f"{name_of(rayjob)}-") or not ray.DNS_LABEL.match(service):
        raise ActionRefused("KubeRay reports a Ray cluster that is not this job's own; the portal does not open it.")
    if address.removeprefix("http://").split(":")[0].split(".")[:2] != [service, namespace]:
        raise ActionRefused("KubeRay reports a dashboard address that is not this job's head service.")
    try:
        found = backend.api.get(SERVICE.item(namespace, service))
    except BackendError as exc:  # not there yet, or not for the portal
        raise NotReady(f"The Ray head's service {service} is not there yet ({exc}).") from None
    found_labels = labels(found)
    ports = {int(p.get("port") or 0) for p in (found.get("spec") or {}).get("ports") or []}
    if found_labels.get(ray.CLUSTER_LABEL) != cluster or found_labels.get(ray.NODE_TYPE_LABEL) != "head":
        raise ActionRefused(f"The service {service} is not the head service of this job's Ray cluster.")
    if ray.DASHBOARD_PORT not in ports:
        raise ActionRefused(f"The Ray head's service {service} has no dashboard port ({ray.DASHBOARD_PORT}).")
    api = _connection(backend)
    path = f"{SERVICE.item(namespace, f'{service}:{ray.DASHBOARD_PORT}')}/proxy"
    if not api.host.startswith(("https://", "http://")):
        raise BackendError(f"The API server address {api.host!r} is not a URL.")
    return ServiceRoute(
        url=api.host + path,
        token="",
        headers=api.headers,
        ca_pem=api.ca_pem,
        rewritten_prefix=path,
        cert_file=api.cert_file,
        key_file=api.key_file,
    )
