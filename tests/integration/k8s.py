"""The test side of Kubernetes: the emulated API server (tests/k8s_emulator.py) over TLS on 127.0.0.1, and the
kubelet's and controllers' part, which tests play by creating pods and setting statuses through the API."""

from __future__ import annotations

import datetime
import email.message
import io
import ipaddress
import json
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import urllib3
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ROOT = Path(__file__).resolve().parents[2]


def _pem_key(key) -> bytes:
    pkcs8 = serialization.PrivateFormat.PKCS8
    return key.private_bytes(serialization.Encoding.PEM, pkcs8, serialization.NoEncryption())


def _certificate(
    subject: x509.Name, key, *, issuer: tuple[x509.Name, object] | None = None, ca: bool, san=None, days: int = 1
):
    """A certificate for `key`'s public half, signed by `issuer` (its name and key), or by itself; valid `days`."""
    issuer_name, issuer_key = issuer or (subject, key)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), True)
    )
    if san is not None:
        builder = builder.add_extension(san, False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_tls(directory: Path, days: int = 1) -> tuple[Path, Path, str]:
    """A self-signed certificate for 127.0.0.1: the API server's certificate and, as PEM, the CA to pin."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
    san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = _certificate(name, key, ca=True, san=san, days=days)
    cert_path, key_path = directory / "apiserver.crt", directory / "apiserver.key"
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_path.write_bytes(pem)
    key_path.write_bytes(_pem_key(key))
    return cert_path, key_path, pem.decode()


@dataclass(frozen=True)
class ClientCertificate:
    """A client certificate and its key, as PEM, and the files they are in (what kubectl or a test presents)."""

    cert_pem: bytes
    key_pem: bytes
    cert_file: Path
    key_file: Path


def make_client_ca(directory: Path, name: str, days: int = 1) -> tuple[Path, object, x509.Name]:
    """A CA that signs client certificates (kubeadm's ca.crt as --client-ca-file): its PEM file, key and name."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    path = directory / f"{name}.crt"
    path.write_bytes(_certificate(subject, key, ca=True, days=days).public_bytes(serialization.Encoding.PEM))
    return path, key, subject


def make_client_certificate(
    directory: Path, ca: tuple[object, x509.Name], user: str, days: int = 1
) -> ClientCertificate:
    """A certificate for `user` (CN), in group system:masters (O), as kubeadm's admin.conf holds, signed by `ca`."""
    ca_key, ca_name = ca
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"), x509.NameAttribute(NameOID.COMMON_NAME, user)]
    )
    cert = _certificate(subject, key, issuer=(ca_name, ca_key), ca=False, days=days)
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_file, key_file = directory / f"{user}.crt", directory / f"{user}.key"
    cert_file.write_bytes(cert_pem)
    key_file.write_bytes(_pem_key(key))
    key_file.chmod(0o600)
    return ClientCertificate(cert_pem, _pem_key(key), cert_file, key_file)


class Emulator:
    """The emulated API server as a process; with `node`, one node runs beside it (tests/k8s_node.py) and keeps its
    pods' files there: the bundled workloads' pods then run as local processes. `port` 0 picks a free one;
    certificates are valid `days`."""

    def __init__(
        self,
        directory: Path,
        *,
        mpi: bool = True,
        node: Path | None = None,
        port: int = 0,
        days: int = 1,
        kueue: bool = False,
    ):
        self.directory = directory
        cert, key, self.ca_pem = make_tls(directory, days)
        client_ca, ca_key, ca_name = make_client_ca(directory, "kubernetes-client-ca", days)
        self.portal_certificate = make_client_certificate(directory, (ca_key, ca_name), "gpulab-portal", days)
        self.admin_certificate = make_client_certificate(directory, (ca_key, ca_name), "kubernetes-admin", days)
        argv = [
            sys.executable,
            "-m",
            "tests.k8s_emulator",
            "--port",
            str(port),
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
            "--client-ca",
            str(client_ca),
        ]
        self.log = (directory / "emulator.log").open("w+")
        self.proc = subprocess.Popen(
            [
                *argv,
                *(["--mpi"] if mpi else []),
                *(["--kueue"] if kueue else []),
                *(["--node", str(node)] if node else []),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening "):
            self.log.seek(0)
            raise RuntimeError(f"the Kubernetes emulator did not start: {line} {self.log.read()[-2000:]}")
        self.url = line.split()[1]
        self.tls = ssl.create_default_context(cadata=self.ca_pem)  # the tests' own calls sign in as the cluster's admin
        self.tls.load_cert_chain(self.admin_certificate.cert_file, self.admin_certificate.key_file)
        # Kept-alive TLS connections: a handshake per call costs more than the call (4 ms against 0.6), and a test
        # or benchmark that plays the kubelet for hundreds of pods makes thousands of calls.
        host, bound = self.url.removeprefix("https://").rsplit(":", 1)
        retry = urllib3.Retry(total=1, allowed_methods=None, redirect=0, status=0)  # once, for a connection gone idle
        self.pool = urllib3.HTTPSConnectionPool(
            host, int(bound), ssl_context=self.tls, maxsize=8, timeout=10, retries=retry
        )

    def stop(self) -> None:
        self.pool.close()
        self.proc.terminate()  # a node stops its pods' processes first
        self.proc.wait(timeout=30)

    def kubeconfig(self, token: str | None, *, context: str = "lab") -> str:
        """A kubeconfig for the portal that signs in with `token`, or with None, with a client certificate the
        API server's client CA signed, embedded as kubeadm, kind and minikube write it."""
        import base64

        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        if token is None:
            cert = self.portal_certificate
            user = {"client-certificate-data": b64(cert.cert_pem), "client-key-data": b64(cert.key_pem)}
        else:
            user = {"token": token}
        return json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "lab-cluster",
                        "cluster": {
                            "server": self.url,
                            "certificate-authority-data": b64(self.ca_pem.encode()),
                        },
                    }
                ],
                "users": [{"name": "portal", "user": user}],
                "contexts": [{"name": context, "context": {"cluster": "lab-cluster", "user": "portal"}}],
                "current-context": context,
            }
        )

    # -- raw HTTP, as kubectl or a controller would ---------------------------------------------------------------
    def call(self, method: str, path: str, body=None, content_type: str = "application/json"):
        """One request over the kept-alive connections; None for 404, urllib's HTTPError for another error."""
        data = body if isinstance(body, bytes) else None if body is None else json.dumps(body).encode()
        response = self.pool.request(method, path, body=data, headers={"Content-Type": content_type})
        raw = response.data
        if response.status == 404:
            return None
        if response.status >= 400:
            headers = email.message.Message()
            for key, value in response.headers.items():
                headers[key] = value
            raise urllib.error.HTTPError(
                self.url + path, response.status, response.reason or "", headers, io.BytesIO(raw)
            )
        try:
            return json.loads(raw)
        except ValueError:
            return raw

    def deny(self, *rules: str) -> None:
        self.call("POST", "/_emulator/config", {"deny": list(rules)})

    def requests(self) -> list[str]:
        return self.call("GET", "/_emulator/requests")

    def clear_requests(self) -> None:
        self.call("DELETE", "/_emulator/requests")

    def items(self, collection: str, selector: str = "") -> list[dict]:
        query = f"?labelSelector={urllib.parse.quote(selector)}" if selector else ""
        found = self.call("GET", collection + query)
        return (found or {}).get("items") or []

    def get(self, path: str) -> dict | None:
        return self.call("GET", path)

    def write_log(self, namespace: str, pod: str, container: str, text: str) -> None:
        self.call("POST", f"/_emulator/logs/{namespace}/{pod}/{container}", text.encode(), "text/plain")

    def route_service(self, namespace: str, service: str, url: str) -> None:
        self.call("POST", f"/_emulator/upstreams/{namespace}/{service}", {"url": url})

    # -- the kubelet's and controllers' part -------------------------------------------------------------------
    def start_pod(self, workload: dict, name: str, *, phase: str = "Pending", **status) -> dict:
        """Create the pod the workload's controller would create, from its pod template, in `phase`."""
        namespace = workload["metadata"]["namespace"]
        template = workload["spec"]["template"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, **template.get("metadata", {})},
            "spec": template["spec"],
        }
        self.call("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
        return self.set_pod(namespace, name, phase=phase, **status)

    def set_pod(self, namespace: str, name: str, *, phase: str, ready: bool = False, **extra) -> dict:
        started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        status = {"phase": phase, "startTime": started if phase != "Pending" else None, **extra}
        conditions = list(extra.get("conditions", []))
        if phase == "Running":
            conditions.append({"type": "Ready", "status": "True" if ready else "False"})
        status["conditions"] = conditions
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/status"
        return self.call("PATCH", path, {"status": status}, "application/merge-patch+json")

    def set_status(self, path: str, status: dict) -> dict:
        return self.call("PATCH", f"{path}/status", {"status": status}, "application/merge-patch+json")

    # -- Kueue's controller's part --------------------------------------------------------------------------------
    def pend(self, cluster_queue: str, workloads: list[dict]) -> None:
        """The order Kueue's visibility API reports for a ClusterQueue's pending workloads, first to admit first."""
        self.call("POST", f"/_emulator/pending/{cluster_queue}", {"workloads": workloads})

    @staticmethod
    def unschedulable(message: str) -> dict:
        return {
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]
        }
