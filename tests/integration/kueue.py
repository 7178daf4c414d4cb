"""Kueue's controller, played by the tests: it makes a Job's (PyTorchJob's, RayJob's) Workload and writes its status
the way Kueue's API types define it (kueue.x-k8s.io/v1beta1, Kueue v0.13: conditions QuotaReserved, Admitted,
PodsReady, Evicted, Preempted, Requeued, Finished with their reasons; status.admission), updates a ClusterQueue's
usage, and starts or suspends the Job as Kueue does. Each write moves a clock of its own one second on, so every
condition's lastTransitionTime is a moment of its own, as the real controller's are."""

from __future__ import annotations

import datetime

from .k8s import Emulator

KUEUE = "/apis/kueue.x-k8s.io/v1beta1"
FLAVOR = "default-flavor"


def nested(keys: tuple[str, ...], value) -> dict:
    """{"a": {"b": value}} for ("a", "b"): a merge patch of one field."""
    for key in reversed(keys):
        value = {key: value}
    return value


class Kueue:
    def __init__(self, kube: Emulator):
        self.kube = kube
        self.clock = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        self.conditions: dict[str, dict[str, dict]] = {}  # workload path → type → condition

    def _tick(self) -> str:
        self.clock += datetime.timedelta(seconds=1)
        return self.clock.strftime("%Y-%m-%dT%H:%M:%SZ")

    def workload_for(self, job: dict, kind: str = "Job") -> str:
        """The Workload Kueue makes for a suspended Job (or an operator's job): named after it, owned by it, a podSet
        per pod template (a PyTorchJob's: one per replica type)."""
        meta = job["metadata"]
        name = f"{kind.lower()}-{meta['name']}-{meta['uid'][:5]}"
        if kind == "PyTorchJob":
            pod_sets = [
                {"name": replica.lower(), "count": spec.get("replicas", 1), "template": spec["template"]}
                for replica, spec in job["spec"]["pytorchReplicaSpecs"].items()
            ]
        elif kind == "AppWrapper":  # Kueue's AppWrapper integration: <name>-<i> for each wrapped pod template
            pod_sets = [
                {"name": f"{meta['name']}-{i}", "count": c["template"]["spec"].get("parallelism", 1), "template": t}
                for i, c in enumerate(job["spec"]["components"])
                for t in [c["template"]["spec"]["template"]]
            ]
        elif kind == "RayJob":  # Kueue v0.13's RayJob.PodSets: the head, each worker group, the submitter (K8sJobMode)
            cluster = job["spec"]["rayClusterSpec"]
            pod_sets = [{"name": "head", "count": 1, "template": cluster["headGroupSpec"]["template"]}]
            pod_sets += [
                {
                    "name": group["groupName"],
                    "count": group.get("replicas", 1) * group.get("numOfHosts", 1),
                    "template": group["template"],
                }
                for group in cluster.get("workerGroupSpecs", [])
            ]
            pod_sets.append({"name": "submitter", "count": 1, "template": job["spec"]["submitterPodTemplate"]})
        else:
            pod_sets = [
                {"name": "main", "count": job["spec"].get("parallelism", 1), "template": job["spec"]["template"]}
            ]
        workload = {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "Workload",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "labels": {"kueue.x-k8s.io/job-uid": meta["uid"]},
                "ownerReferences": [
                    {
                        "apiVersion": job["apiVersion"],
                        "kind": kind,
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "queueName": meta["labels"]["kueue.x-k8s.io/queue-name"],
                "podSets": pod_sets,
            },
        }
        created = self.kube.call("POST", f"{KUEUE}/namespaces/{meta['namespace']}/workloads", workload)
        assert created["metadata"]["name"] == name, created
        path = f"{KUEUE}/namespaces/{meta['namespace']}/workloads/{name}"
        self.conditions[path] = {}
        return path

    def _write(self, path: str, changes: dict[str, tuple[str, str, str]], **status) -> None:
        at = self._tick()
        for kind, (state, reason, message) in changes.items():
            old = self.conditions[path].get(kind)
            moved = old is None or old["status"] != state
            self.conditions[path][kind] = {
                "type": kind,
                "status": state,
                "reason": reason,
                "message": message,
                "lastTransitionTime": at if moved else old["lastTransitionTime"],
            }
        self.kube.set_status(path, {"conditions": list(self.conditions[path].values()), **status})

    def no_quota(self, path: str, more: int) -> None:
        message = (
            f"couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
            f"{FLAVOR}, {more} more needed"
        )
        self._write(path, {"QuotaReserved": ("False", "Pending", message)})

    def admit(
        self, path: str, job_path: str, cluster_queue: str, gpus: int = 1, suspend_field: tuple[str, ...] = ("suspend",)
    ) -> None:
        pod_sets = self.kube.get(path)["spec"]["podSets"]
        admission = {
            "clusterQueue": cluster_queue,
            "podSetAssignments": [
                {
                    "name": pod_set["name"],
                    "flavors": {"nvidia.com/gpu": FLAVOR},
                    "resourceUsage": {"nvidia.com/gpu": gpus // len(pod_sets)},
                    "count": pod_set["count"],
                }
                for pod_set in pod_sets
            ],
        }
        changes = {
            "QuotaReserved": ("True", "QuotaReserved", f"Quota reserved in ClusterQueue {cluster_queue}"),
            "Admitted": ("True", "Admitted", "The workload is admitted"),
        }
        for kind in ("Evicted", "Preempted"):  # a new reservation clears an earlier eviction, as Kueue does
            if kind in self.conditions[path]:
                changes[kind] = ("False", "QuotaReserved", "Previously: evicted")
        self._write(path, changes, admission=admission)
        self.kube.call("PATCH", job_path, {"spec": nested(suspend_field, False)}, "application/merge-patch+json")

    def pods_ready(self, path: str) -> None:
        self._write(path, {"PodsReady": ("True", "PodsReady", "All pods reached readiness")})

    def preempt(self, path: str, job_path: str, why: str) -> None:
        """Evicted (Preempted) with the Preempted condition's detailed reason; the Job is suspended again."""
        self._write(
            path,
            {
                "Evicted": ("True", "Preempted", f"Preempted to accommodate a workload due to {why}"),
                "Preempted": ("True", why, f"Preempted to accommodate a workload due to {why}"),
                "QuotaReserved": ("False", "Pending", "Preempted"),
                "Admitted": ("False", "NoReservation", "The workload has no reservation"),
                "PodsReady": ("False", "PodsReady", "Not all pods are ready or succeeded"),
                "Requeued": ("False", "Preempted", "The workload is waiting for its pods to stop"),
            },
            admission=None,
        )
        self.kube.call("PATCH", job_path, {"spec": {"suspend": True}}, "application/merge-patch+json")

    def requeue(self, path: str) -> None:
        self._write(path, {"Requeued": ("True", "Preempted", "The workload was requeued after preemption")})

    def finish(self, path: str) -> None:
        self._write(path, {"Finished": ("True", "Succeeded", "Job finished successfully")})

    def usage(self, cluster_queue: str, *, used: int, borrowed: int = 0, pending: int = 0, admitted: int = 0):
        flavors = [{"name": FLAVOR, "resources": [{"name": "nvidia.com/gpu", "total": used, "borrowed": borrowed}]}]
        status = {
            "flavorsUsage": flavors,
            "flavorsReservation": flavors,
            "pendingWorkloads": pending,
            "reservingWorkloads": admitted,
            "admittedWorkloads": admitted,
        }
        self.kube.set_status(f"{KUEUE}/clusterqueues/{cluster_queue}", status)
