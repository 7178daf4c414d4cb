"""The Kubernetes API as the portal uses it: the official client's configuration, TLS and connection pool,
requests that send and return plain dicts, and API errors turned into BackendErrors a person can act on.

Objects stay data end to end (built by manifests.py, validated, sent as JSON), so this module needs no
per-kind client classes: it knows where each kind lives and nothing else. The credential (a bearer token
or a kubeconfig) is decrypted only here, into the client's configuration, and never into a message.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import urllib3
import yaml
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import load_kube_config_from_dict

from ...base import AuthenticationFailed, BackendError, ClusterUnreachable, PermissionDenied, SubmitRejected
from .settings import cluster_settings

if TYPE_CHECKING:
    from clusters.models import Cluster, ClusterAccount

ssl_errors = (urllib3.exceptions.SSLError, ssl.SSLError)
TIMEOUT = (5, 30)  # connect, read (seconds)
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def base(self) -> str:
        return "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"

    def collection(self, namespace: str = "") -> str:
        if self.namespaced:
            return f"{self.base}/namespaces/{namespace}/{self.plural}"
        return f"{self.base}/{self.plural}"

    def item(self, namespace: str, name: str) -> str:
        return f"{self.collection(namespace)}/{name}"


KINDS = {
    (k.api_version, k.kind): k
    for k in [
        Kind("v1", "Pod", "pods"),
        Kind("v1", "Service", "services"),
        Kind("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
        Kind("v1", "ConfigMap", "configmaps"),
        Kind("v1", "Secret", "secrets"),
        Kind("v1", "ResourceQuota", "resourcequotas"),
        Kind("v1", "LimitRange", "limitranges"),
        Kind("v1", "Namespace", "namespaces", namespaced=False),
        Kind("apps/v1", "Deployment", "deployments"),
        Kind("batch/v1", "Job", "jobs"),
        Kind("workload.codeflare.dev/v1beta2", "AppWrapper", "appwrappers"),
        Kind("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"),
        Kind("networking.k8s.io/v1", "Ingress", "ingresses"),
        Kind("kubeflow.org/v2beta1", "MPIJob", "mpijobs"),
        Kind("kubeflow.org/v1", "PyTorchJob", "pytorchjobs"),
        Kind("ray.io/v1", "RayJob", "rayjobs"),
        Kind("ray.io/v1", "RayCluster", "rayclusters"),
        Kind("metrics.k8s.io/v1beta1", "PodMetrics", "pods"),
        Kind("metrics.k8s.io/v1beta1", "NodeMetrics", "nodes", namespaced=False),
    ]
}


def kind_of(obj: dict) -> Kind:
    try:
        return KINDS[(obj.get("apiVersion", ""), obj.get("kind", ""))]
    except KeyError:
        raise BackendError(f"The portal does not manage {obj.get('apiVersion')}/{obj.get('kind')} objects.") from None


POD = KINDS[("v1", "Pod")]
NAMESPACE = KINDS[("v1", "Namespace")]


class NotFound(BackendError):
    pass


class Conflict(BackendError):
    pass


# -- configuration ---------------------------------------------------------------------------------------------
def check_kubeconfig(text: str) -> dict:
    """Parse an uploaded kubeconfig; refuse ones that would make the portal run programs to log in."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        raise BackendError("The kubeconfig is not valid YAML.") from None
    if not isinstance(data, dict) or not data.get("contexts") or not data.get("clusters"):
        raise BackendError("The kubeconfig has no clusters or contexts.")
    for entry in data.get("users") or []:
        user = (entry or {}).get("user") or {}
        if "exec" in user or "auth-provider" in user:
            raise BackendError(
                f"The kubeconfig's user “{entry.get('name')}” logs in by running a program (exec/auth-provider); "
                "the portal does not run programs. Use a service-account token instead."
            )
    return data


def kubeconfig_contexts(text: str) -> list[str]:
    return [c.get("name", "") for c in check_kubeconfig(text).get("contexts") or []]


def configuration(cluster: Cluster, account: ClusterAccount) -> Configuration:
    from clusters.choices import AuthMethod

    config = Configuration()
    secret = account.secret()
    if account.auth_method == AuthMethod.KUBECONFIG:
        try:
            load_kube_config_from_dict(
                check_kubeconfig(secret),
                context=cluster_settings(cluster).kube_context or None,
                client_configuration=config,
                persist_config=False,
            )
        except ConfigException as exc:
            raise BackendError(f"The stored kubeconfig cannot be used: {exc}") from None
    elif account.auth_method == AuthMethod.TOKEN:
        if not cluster.api_url:
            raise BackendError(f"“{cluster.display_name}” has no API server URL; an admin must set it.")
        config.host = cluster.api_url.rstrip("/")
        config.api_key = {"authorization": f"Bearer {secret.strip()}"}
        config.ca_cert_data = cluster_settings(cluster).ca_certificate.strip() or None
    else:
        raise BackendError(f"The account {account.username} holds SSH credentials, not Kubernetes ones.")
    config.retries = 1
    return config


_clients: dict[tuple, ApiClient] = {}
_clients_lock = threading.Lock()


def client_for(cluster: Cluster, account: ClusterAccount) -> ApiClient:
    """One pooled client per (cluster, account) per process; a changed credential or cluster makes a new one."""
    key = (os.getpid(), cluster.pk, account.pk, cluster.updated_at, account.updated_at)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            for stale in [k for k in _clients if k[1:3] == key[1:3] or k[0] != key[0]]:
                _clients.pop(stale)
            client = _clients[key] = ApiClient(configuration(cluster, account))
        return client


# -- requests ----------------------------------------------------------------------------------------------------
class KubeAPI:
    def __init__(self, cluster: Cluster, account: ClusterAccount):
        self.cluster = cluster
        self.client = client_for(cluster, account)

    def _send(self, method: str, path: str, *, query=None, body=None, content_type=None, timeout=TIMEOUT):
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        method, url, headers, body, _ = self.client.param_serialize(
            method,
            path,
            query_params=[(k, v) for k, v in (query or {}).items() if v is not None],
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            response = self.client.call_api(method, url, header_params=headers, body=body, _request_timeout=timeout)
        except urllib3.exceptions.HTTPError as exc:
            if isinstance(exc, urllib3.exceptions.SSLError) or isinstance(getattr(exc, "reason", None), ssl_errors):
                raise BackendError(
                    f"The API server of “{self.cluster.display_name}” presented a certificate the stored CA does not "
                    f"sign ({_short(exc)}). An admin must check the CA certificate."
                ) from None
            raise ClusterUnreachable(
                f"The Kubernetes API server of “{self.cluster.display_name}” did not answer ({_short(exc)})."
            ) from None
        if response.status >= 400:
            raise self._error(response.status, response.read())
        return response

    def _error(self, status: int, raw: bytes) -> BackendError:
        try:
            body = json.loads(raw)
            error = body.get("error")
            message = body.get("message") or (error.get("message") if isinstance(error, dict) else error) or ""
        except (ValueError, AttributeError):
            message = raw[:300].decode("utf-8", "replace")
        where = f"“{self.cluster.display_name}”"
        if status == 401:
            return AuthenticationFailed(
                f"The Kubernetes API server of {where} refused the portal's credentials (401). "
                "An admin must renew them."
            )
        if status == 403:
            return PermissionDenied(f"{where} refused: {message}")
        if status == 404:
            return NotFound(message or "not found")
        if status == 409:
            return Conflict(message or "already exists")
        if status in (400, 422):
            return SubmitRejected(f"{where} rejected the object: {message}")
        return ClusterUnreachable(f"The Kubernetes API server of {where} answered {status}: {message}")

    def request(self, method: str, path: str, **kwargs) -> Any:
        raw = self._send(method, path, **kwargs).read()
        return json.loads(raw) if raw else {}

    def text(self, path: str, query: dict) -> bytes:
        return self._send("GET", path, query=query).read()

    def stream(self, method: str, path: str, body: dict, timeout=(5, 120)) -> Iterator[bytes]:
        response = self._send(method, path, body=body, timeout=timeout)
        try:
            yield from response.response.stream(1024, decode_content=True)
        finally:
            response.response.release_conn()

    def get(self, path: str) -> dict:
        return self.request("GET", path)

    def list(self, path: str, selector: str = "") -> list[dict]:
        return self.request("GET", path, query={"labelSelector": selector or None}).get("items") or []

    def create(self, path: str, obj: dict) -> dict:
        return self.request("POST", path, body=obj)

    def patch(self, path: str, changes: dict) -> dict:
        return self.request("PATCH", path, body=changes, content_type=MERGE_PATCH)

    def delete(self, path: str) -> None:
        with contextlib.suppress(NotFound):  # already gone is what we wanted
            self.request("DELETE", path, query={"propagationPolicy": "Foreground"})


def _short(exc: Exception) -> str:
    reason = getattr(exc, "reason", None) or exc
    return str(reason).split(": ", 1)[-1][:200]
