"""Kueue's controller, played by the tests: it makes a Job's Workload and writes its status the way Kueue's API types
define it (kueue.x-k8s.io/v1beta1, Kueue v0.13: conditions QuotaReserved, Admitted, PodsReady, Evicted, Preempted,
Requeued, Finished with their reasons; status.admission), updates a ClusterQueue's usage, and starts or suspends
the Job as Kueue does. Each write moves a clock of its own one second on, so every condition's lastTransitionTime
is a moment of its own, as the real controller's are."""

from __future__ import annotations

import datetime

from .k8s import Emulator

KUEUE = "/apis/kueue.x-k8s.io/v1beta1"
FLAVOR = "default-flavor"


class Kueue:
    def __init__(self, kube: Emulator):
        self.kube = kube
        self.clock = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        self.conditions: dict[str, dict[str, dict]] = {}  # workload path → type → condition

    def _tick(self) -> str:
        self.clock += datetime.timedelta(seconds=1)
        return self.clock.strftime("%Y-%m-%dT%H:%M:%SZ")

    def workload_for(self, job: dict) -> str:
        """The Workload Kueue makes for a suspended Job: named after it, owned by it, its pod template as podSet."""
        meta = job["metadata"]
        name = f"job-{meta['name']}-{meta['uid'][:5]}"
        workload = {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "Workload",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "labels": {"kueue.x-k8s.io/job-uid": meta["uid"]},
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "queueName": meta["labels"]["kueue.x-k8s.io/queue-name"],
                "podSets": [
                    {"name": "main", "count": job["spec"].get("parallelism", 1), "template": job["spec"]["template"]}
                ],
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

    def admit(self, path: str, job_path: str, cluster_queue: str, gpus: int = 1) -> None:
        admission = {
            "clusterQueue": cluster_queue,
            "podSetAssignments": [
                {"name": "main", "flavors": {"nvidia.com/gpu": FLAVOR}, "resourceUsage": {"nvidia.com/gpu": gpus}}
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
        self.kube.call("PATCH", job_path, {"spec": {"suspend": False}}, "application/merge-patch+json")

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
