"""KubeRay's operator, played by the tests against the emulated API server, as KubeRay v1.4.2 behaves: a RayJob's
status (jobDeploymentStatus, jobStatus, rayClusterName, dashboardURL, reason, message, startTime, endTime), the
RayCluster it makes (named <RayJob>-<5 characters>, carrying the RayJob's labels, owned by it, with its
ReplicaFailure condition when it cannot create pods), the Ray pods from the RayJob's templates (labelled as
KubeRay labels them: ray.io/cluster, ray.io/node-type), the head service <RayCluster>-head-svc with its ports, and
the submitter pod of K8sJobMode."""

from __future__ import annotations

import datetime
import secrets

from .k8s import Emulator

RAY = "/apis/ray.io/v1"
PORTS = [("gcs-server", 6379), ("dashboard", 8265), ("client", 10001), ("metrics", 8080), ("serve", 8000)]


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class KubeRay:
    def __init__(self, kube: Emulator, namespace: str):
        self.kube, self.namespace = kube, namespace

    def rayjob(self, job) -> tuple[dict, str]:
        (found,) = self.kube.items(f"{RAY}/namespaces/{self.namespace}/rayjobs", f"gpulab.io/job={job.pk}")
        return found, f"{RAY}/namespaces/{self.namespace}/rayjobs/{found['metadata']['name']}"

    def status(self, path: str, **status) -> None:
        self.kube.set_status(path, status)

    def suspended(self, path: str) -> None:
        self.status(path, jobDeploymentStatus="Suspended", jobStatus="")

    def initialize(self, rayjob: dict, path: str) -> str:
        """New → Initializing: the RayCluster's name and the Ray job's id are chosen, the RayCluster is made."""
        name = rayjob["metadata"]["name"]
        cluster = f"{name}-{secrets.token_hex(3)[:5]}"
        labels = {
            **rayjob["metadata"]["labels"],
            "ray.io/originated-from-cr-name": name,
            "ray.io/originated-from-crd": "RayJob",
        }
        owner = {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": name, "uid": rayjob["metadata"]["uid"]}
        body = {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": cluster, "namespace": self.namespace, "labels": labels, "ownerReferences": [owner]},
            "spec": rayjob["spec"]["rayClusterSpec"],
        }
        self.kube.call("POST", f"{RAY}/namespaces/{self.namespace}/rayclusters", body)
        self.status(
            path,
            jobDeploymentStatus="Initializing",
            jobStatus="",
            rayClusterName=cluster,
            jobId=f"{name}-{secrets.token_hex(3)[:5]}",
            startTime=now(),
        )
        return cluster

    def cannot_create_pods(self, cluster: str, message: str) -> None:
        """The RayCluster's ReplicaFailure condition, as KubeRay sets it when the API server refuses its head pod."""
        condition = {
            "type": "ReplicaFailure",
            "status": "True",
            "reason": "FailedCreateHeadPod",
            "message": message,
            "lastTransitionTime": now(),
        }
        self.kube.set_status(f"{RAY}/namespaces/{self.namespace}/rayclusters/{cluster}", {"conditions": [condition]})

    def pod(self, rayjob: dict, cluster: str, role: str, *, phase: str, **status) -> str:
        """One of the Ray cluster's pods (head, a worker) or the submitter's, from the RayJob's template for it."""
        spec = rayjob["spec"]
        if role == "head":
            template, labels = spec["rayClusterSpec"]["headGroupSpec"]["template"], {"ray.io/node-type": "head"}
        elif role == "submitter":
            template, labels = (
                spec["submitterPodTemplate"],
                {"batch.kubernetes.io/job-name": rayjob["metadata"]["name"]},
            )
        else:
            group = spec["rayClusterSpec"]["workerGroupSpecs"][0]
            template, labels = group["template"], {"ray.io/node-type": "worker", "ray.io/group": group["groupName"]}
        if role != "submitter":
            labels["ray.io/cluster"] = cluster
        name = f"{cluster}-{role}-{secrets.token_hex(3)[:5]}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {**template["metadata"]["labels"], **labels},
            },
            "spec": template["spec"],
        }
        self.kube.call("POST", f"/api/v1/namespaces/{self.namespace}/pods", pod)
        self.kube.set_pod(self.namespace, name, phase=phase, **status)
        return name

    def head_service(self, cluster: str) -> str:
        name = f"{cluster}-head-svc"
        labels = {
            "ray.io/cluster": cluster,
            "ray.io/node-type": "head",
            "ray.io/identifier": f"{cluster}-head",
            "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator",
        }
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": labels,
                "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": cluster, "uid": "x"}],
            },
            "spec": {
                "selector": {k: labels[k] for k in ("ray.io/cluster", "ray.io/node-type")},
                "ports": [{"name": port, "port": number, "appProtocol": "tcp"} for port, number in PORTS],
            },
        }
        self.kube.call("POST", f"/api/v1/namespaces/{self.namespace}/services", service)
        return name

    def ready(self, path: str, cluster: str) -> None:
        """The RayCluster is ready: the dashboard's address is known, the submitter Job made: Initializing → Running."""
        self.status(
            path,
            jobDeploymentStatus="Running",
            jobStatus="PENDING",
            dashboardURL=f"{cluster}-head-svc.{self.namespace}.svc.cluster.local:8265",
            rayClusterStatus={"state": "ready", "head": {"serviceName": f"{cluster}-head-svc"}},
        )

    def ray_job(self, path: str, job_status: str, message: str = "") -> None:
        self.status(path, jobStatus=job_status, message=message)

    def complete(self, path: str, job_status: str = "SUCCEEDED", message: str = "") -> None:
        deployment = "Failed" if job_status == "FAILED" else "Complete"
        reason = "AppFailed" if job_status == "FAILED" else ""
        self.status(
            path, jobDeploymentStatus=deployment, jobStatus=job_status, reason=reason, message=message, endTime=now()
        )

    def past_deadline(self, path: str, seconds: int) -> None:
        """checkActiveDeadlineAndUpdateStatusIfNeeded: Failed, DeadlineExceeded, KubeRay's own message."""
        rayjob = self.kube.get(path)
        started = rayjob["status"]["startTime"]
        self.status(
            path,
            jobDeploymentStatus="Failed",
            reason="DeadlineExceeded",
            message=(
                f"The RayJob has passed the activeDeadlineSeconds. StartTime: {started}. ActiveDeadlineSeconds: "
                f"{seconds}"
            ),
            endTime=now(),
        )

    def remove_cluster(self, cluster: str, pods: list[str]) -> None:
        """shutdownAfterJobFinishes: the RayCluster goes, and its pods with it (Kubernetes' garbage collector)."""
        for pod in pods:
            self.kube.call("DELETE", f"/api/v1/namespaces/{self.namespace}/pods/{pod}")
        self.kube.call("DELETE", f"{RAY}/namespaces/{self.namespace}/rayclusters/{cluster}")
