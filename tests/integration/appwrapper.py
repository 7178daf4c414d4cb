"""The AppWrapper controller, played by the tests (workload.codeflare.dev/v1beta2, AppWrapper v1.2.1's
internal/controller/appwrapper/appwrapper_controller.go): it moves `status.phase` and sets the conditions QuotaReserved,
ResourcesDeployed, PodsReady and Unhealthy with the reasons and messages the controller writes, creates the wrapped Job
from the component's template (with the AppWrapper's label and owner reference) once Kueue has unsuspended the
AppWrapper, and deletes it to reset. Every status it writes is first checked against the published CRD schema
(crds/operators.yaml), and each write moves a clock of its own one second on, as tests/integration/kueue.py does.

A condition keeps its lastTransitionTime while its status stays the same (meta.SetStatusCondition); "clearing" one
sets it False only when it was True, as the controller's clearCondition does."""

from __future__ import annotations

import copy
import datetime

from clusters.backends.kinds.kubernetes import crds

from .k8s import Emulator

AW = "/apis/workload.codeflare.dev/v1beta2"
AW_LABEL = "workload.codeflare.dev/appwrapper"


class AppWrapperController:
    def __init__(self, kube: Emulator):
        self.kube = kube
        self.clock = datetime.datetime.now(datetime.UTC).replace(microsecond=0)

    @staticmethod
    def path(namespace: str, name: str) -> str:
        return f"{AW}/namespaces/{namespace}/appwrappers/{name}"

    def _tick(self) -> str:
        self.clock += datetime.timedelta(seconds=1)
        return self.clock.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _write(self, path: str, phase: str | None = None, changes: dict | None = None, **fields) -> dict:
        found = self.kube.get(path)
        assert found is not None, f"no AppWrapper at {path}"
        status = copy.deepcopy(found.get("status") or {})
        conditions = {c["type"]: c for c in status.get("conditions") or []}
        at = self._tick()
        for kind, (state, reason, message) in (changes or {}).items():
            old = conditions.get(kind)
            moved = old is None or old["status"] != state
            when = at if moved else old["lastTransitionTime"]
            conditions[kind] = {"type": kind, "status": state, "reason": reason, "message": message}
            conditions[kind]["lastTransitionTime"] = when
        status |= {"conditions": list(conditions.values()), **fields}
        if phase is not None:
            status["phase"] = phase
        crds.validate({**found, "status": status})  # as the API types define it, or the test is wrong
        return self.kube.set_status(path, status)

    def _holds(self, path: str, kind: str) -> bool:
        conditions = (self.kube.get(path).get("status") or {}).get("conditions") or []
        return any(c["type"] == kind and c["status"] == "True" for c in conditions)

    # -- the phases ---------------------------------------------------------------------------------------------
    def take_up(self, path: str) -> None:
        """Empty → Suspended: the component status initialised with the pod sets inferred for a batch/v1 Job."""
        wrapper = self.kube.get(path)
        components = [
            {
                "name": c["template"]["metadata"]["name"],
                "kind": c["template"]["kind"],
                "apiVersion": c["template"]["apiVersion"],
                "podSets": [
                    {"replicas": c["template"]["spec"].get("parallelism", 1), "path": "template.spec.template"}
                ],
            }
            for c in wrapper["spec"]["components"]
        ]
        self._write(path, "Suspended", componentStatus=components)

    def resume(self, path: str) -> tuple[dict, str]:
        """Suspended and unsuspended by Kueue → Resuming → its Job created → Running; the Job and its path."""
        assert self.kube.get(path)["spec"].get("suspend") is not True, "Kueue has not let the AppWrapper go"
        self._write(
            path,
            "Resuming",
            {
                "QuotaReserved": ("True", "Resuming", "Suspend is false"),
                "ResourcesDeployed": ("True", "Resuming", "Suspend is false"),
                "PodsReady": ("False", "Resuming", "Suspend is false"),
                "Unhealthy": ("False", "Resuming", "Suspend is false"),
            },
        )
        return self._deploy(path)

    def _deploy(self, path: str) -> tuple[dict, str]:
        wrapper = self.kube.get(path)
        meta = wrapper["metadata"]
        job = copy.deepcopy(wrapper["spec"]["components"][0]["template"])
        job["metadata"]["labels"] = {**job["metadata"].get("labels", {}), AW_LABEL: meta["name"]}
        pod_meta = job["spec"]["template"].setdefault("metadata", {})
        pod_meta["labels"] = {**pod_meta.get("labels", {}), AW_LABEL: meta["name"]}
        owner = {"apiVersion": wrapper["apiVersion"], "kind": "AppWrapper", "name": meta["name"], "uid": meta["uid"]}
        job["metadata"]["ownerReferences"] = [{**owner, "controller": True, "blockOwnerDeletion": True}]
        collection = f"/apis/batch/v1/namespaces/{meta['namespace']}/jobs"
        created = self.kube.call("POST", collection, job)
        self._write(path, "Running")
        return created, f"{collection}/{created['metadata']['name']}"

    def pods_ready(self, path: str, running: int, succeeded: int = 0) -> None:
        changes = {"PodsReady": ("True", "SufficientPodsReady", f"{running} pods running; {succeeded} pods succeeded")}
        if self._holds(path, "Unhealthy"):
            changes["Unhealthy"] = ("False", "FoundNoFailedPods", "")
        self._write(path, None, changes)

    def found_failed_pods(self, path: str) -> None:
        """A pod failed: Unhealthy, with no message (the controller leaves the count out, so that the time holds)."""
        self._write(path, None, {"Unhealthy": ("True", "FoundFailedPods", "")})

    def reset(self, path: str, job_path: str, pods: list[tuple[str, str]]) -> None:
        """The failure grace period ran out: Resetting (one more retry), its Job and pods deleted."""
        retries = int((self.kube.get(path).get("status") or {}).get("resettingCount") or 0) + 1
        self._write(path, "Resetting", resettingCount=retries)
        self.kube.call("DELETE", job_path)
        for namespace, name in pods:
            self.kube.call("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}")
        changes = {
            "PodsReady": ("False", "Resetting", ""),
            "ResourcesDeployed": ("False", "Resetting", "Resources deleted for resetting AppWrapper"),
        }
        self._write(path, None, changes)

    def resume_after_reset(self, path: str) -> tuple[dict, str]:
        """The retry pause is over: Resuming, and its Job made again."""
        self._write(path, "Resuming", {"ResourcesDeployed": ("True", "Resuming", "Reset complete; resuming")})
        return self._deploy(path)

    def succeed(self, path: str, succeeded: int) -> None:
        message = f"{succeeded} pods succeeded and no running, pending, or failed pods"
        changes = {
            "QuotaReserved": ("False", "Succeeded", message),
            "ResourcesDeployed": ("True", "Succeeded", message),
        }
        self._write(path, "Succeeded", changes)
