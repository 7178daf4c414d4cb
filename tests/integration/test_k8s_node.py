"""The emulated cluster's node (tests/k8s_node.py), which `make demo` and the demo's browser test stand on: its
controllers make the pods, its kubelet runs them as local processes and reports them as the API types say, and what
it cannot run waits with the reason a real cluster would give."""

from __future__ import annotations

import subprocess
import uuid

import pytest

from .conftest import wait_for
from .k8s import Emulator

NS = "node-test"


@pytest.fixture(scope="module")
def node_kube(tmp_path_factory):
    directory = tmp_path_factory.mktemp("kube-node-unit")
    emulator = Emulator(directory, mpi=False, node=directory / "node")
    emulator.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    yield emulator
    emulator.stop()


def deployment(name: str, container: dict, replicas: int = 1) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }


def pods_of(kube: Emulator, app: str) -> list[dict]:
    return kube.items(f"/api/v1/namespaces/{NS}/pods", f"app={app}")


def running(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0


def test_a_deployments_pods_run_as_processes_report_their_status_and_go_with_it(node_kube):
    marker = f"marker-{uuid.uuid4().hex[:8]}"
    script = f"import os, time; print('{marker}', os.environ['HOSTNAME'], flush=True); time.sleep(600)"
    container = {"name": "main", "image": "gpulab/tinylm-server:0.1.0-cpu", "command": ["python", "-c", script]}
    node_kube.call("POST", f"/apis/apps/v1/namespaces/{NS}/deployments", deployment("sleeper", container, 2))

    def both_running():
        pods = pods_of(node_kube, "sleeper")
        return pods if len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods) else None

    pods = wait_for(both_running, timeout=60, what="two running pods")
    assert len({p["status"]["podIP"] for p in pods}) == 2
    for pod in pods:
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
        (status,) = pod["status"]["containerStatuses"]
        assert status["state"]["running"]["startedAt"] and status["restartCount"] == 0
        path = f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}/log?container=main"
        wait_for(lambda p=path: marker.encode() in (node_kube.call("GET", p) or b""), what="the pod's log")
    status_path = f"/apis/apps/v1/namespaces/{NS}/deployments/sleeper"
    found = wait_for(
        lambda: node_kube.get(status_path).get("status", {}).get("readyReplicas") == 2
        and node_kube.get(status_path)["status"],
        what="the Deployment's status",
    )
    assert found["replicas"] == 2 and found["availableReplicas"] == 2
    assert running(marker)

    node_kube.call("DELETE", f"/apis/apps/v1/namespaces/{NS}/deployments/sleeper")
    wait_for(lambda: not pods_of(node_kube, "sleeper"), what="the garbage collector to delete the pods")
    wait_for(lambda: not running(marker), timeout=30, what="the pods' processes to stop")


def test_what_the_node_cannot_run_waits_with_the_reason(node_kube):
    foreign = {"name": "main", "image": "ollama/ollama:0.12.3"}
    node_kube.call("POST", f"/apis/apps/v1/namespaces/{NS}/deployments", deployment("foreign", foreign))
    gpu = {
        "name": "main",
        "image": "gpulab/tinylm-server:0.1.0-cuda",
        "resources": {"limits": {"nvidia.com/gpu": 1}},
    }
    node_kube.call("POST", f"/apis/apps/v1/namespaces/{NS}/deployments", deployment("gpu", gpu))

    def waiting(app: str):
        pods = pods_of(node_kube, app)
        return pods[0]["status"] if pods and pods[0]["status"].get("conditions") else None

    status = wait_for(lambda: waiting("foreign"), what="the foreign image's pod status")
    assert status["phase"] == "Pending"
    state = status["containerStatuses"][0]["state"]["waiting"]
    assert state["reason"] == "ErrImagePull" and "runs only the bundled images" in state["message"]
    status = wait_for(lambda: waiting("gpu"), what="the GPU pod's status")
    (scheduled,) = status["conditions"]
    assert status["phase"] == "Pending" and scheduled["reason"] == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in scheduled["message"]
