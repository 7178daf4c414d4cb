"""The Kubernetes part of the Day-2 lab in Chromium, on the emulated cluster `make demo` registers: the API server of
tests/k8s_emulator.py with its node (tests/k8s_node.py), which runs the bundled trainer, inference server and load
generator as local processes. Nobody plays the kubelet here: the pods start, get ready, answer, scale and stop by
themselves, and the portal reaches them only through the official kubernetes client.

A student trains the Tiny LM (a Kubernetes Job writing to its volume), deploys the server, tries it, scales it to 3,
load-tests it, reads its log and deletes it, and every page that names the cluster says it is emulated.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from clusters.kinds import get_backend
from clusters.models import AuthMethod, Cluster
from courses.models import Course
from jobs.models import Job

from .conftest import ROOT, wait_for
from .k8s import Emulator
from .test_browser import log_in

pytestmark = pytest.mark.browser
SHOTS = Path(os.environ.get("GPULAB_SHOTS", "/tmp/gpulab-shots"))
TRAIN = {
    "gpus": 0,
    "image": "gpulab/tinylm-trainer:0.1.0-cpu",
    "model": "tiny",
    "max_steps": 10,
    "batch_size": 4,
    "precision": "fp32",
    "checkpoint_claim": "tinylm-checkpoints",
}


@pytest.fixture(scope="module")
def emulated_kube(tmp_path_factory):
    """The emulated cluster with its node, as make demo starts it (tests/k8s_demo.py)."""
    if not (ROOT / "workloads/.venv/bin/python").exists():
        pytest.fail("workloads/.venv is missing; `make test` builds it")
    directory = tmp_path_factory.mktemp("kube-node")
    emulator = Emulator(directory, mpi=False, node=directory / "node")
    yield emulator
    emulator.stop()


@pytest.fixture
def emulated_cluster(transactional_db, course, emulated_kube, services, tmp_path):
    """Registered as make demo registers it (scripts/demo.sh): the emulator's kubeconfig in a file, the clusters.d
    entry scripts/demo_cluster.sh writes for it, and sync_clusters, which gives it to the demo course."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(emulated_kube.kubeconfig(None, context="emulated"))
    written = tmp_path / "clusters.d"
    env = {**os.environ, "GPULAB_KUBECONFIG_FILE": str(kubeconfig), "GPULAB_KUBE_EMULATED": "true"}
    subprocess.run(
        ["bash", "scripts/demo_cluster.sh", str(written)],
        cwd=ROOT,
        env={**env, "GPULAB_KUBE_CONTEXT": "emulated"},
        check=True,
    )
    only_kubernetes = tmp_path / "k8s-only"  # the demo's SLURM entries are other tests' business
    only_kubernetes.mkdir()
    (only_kubernetes / "k8s.yml").write_text((written / "k8s.yml").read_text())
    demo = Course.objects.create(slug="demo", name="GPU Lab demo")
    call_command("sync_clusters", str(only_kubernetes))
    cluster = Cluster.objects.get(name="k8s")
    assert (cluster.kind, cluster.emulated, cluster.title) == ("kubernetes", True, "Emulated Kubernetes (demo)")
    assert cluster.kind_settings["kube_context"] == "emulated" and list(cluster.courses.all()) == [demo]
    account = cluster.service_account()
    assert account.auth_method == AuthMethod.KUBECONFIG and account.secret() == kubeconfig.read_text()
    assert get_backend(cluster).test_connection().ok  # the portal reaches the emulator with what the file gave it
    course.clusters.add(cluster)
    return cluster


def job_pods(kube: Emulator, job: Job) -> list[dict]:
    namespace = job.scheduler_id.split("/")[0]
    return kube.items(f"/api/v1/namespaces/{namespace}/pods", f"gpulab.io/job={job.pk}")


def reason_says(job: Job, text: str):
    return lambda: text in (Job.objects.get(pk=job.pk).scheduler_reason or "")


@pytest.mark.timeout(900)
def test_student_deploys_tries_scales_load_tests_and_deletes_the_tiny_lm_on_the_emulated_cluster(
    worker, chromium, live_server, alice, course, emulated_cluster, emulated_kube, k8s_templates, api_for, job_state
):
    SHOTS.mkdir(parents=True, exist_ok=True)
    # Training first, as the lab goes: a Job whose pod runs the bundled trainer and leaves model.pt on the volume.
    answer = api_for(alice).post(
        "/api/v1/jobs/", {"template": "k8s-tinylm-train", "cluster": "k8s", "params": TRAIN}, format="json"
    )
    assert answer.status_code == 201, answer.content
    trained = job_state(Job.objects.get(pk=answer.json()["id"]), "completed", "failed", timeout=300)
    log = api_for(alice).get(f"/api/v1/jobs/{trained.pk}/log/?offset=0").json()["data"]
    assert trained.state == "completed", log
    assert "step=10" in log and "checkpoint saved" in log

    page = chromium.new_context(viewport={"width": 1280, "height": 800}).new_page()
    log_in(page, live_server, "alice")
    page.click(f"a[href='/courses/{course.slug}/launch/k8s-tinylm-server/']")
    expect(page.locator("#id_cluster")).to_contain_text("Emulated Kubernetes (demo)")
    page.fill("#id_param_gpus", "0")
    page.click("#launch")

    # Deployed: the pod runs the server, which loads the checkpoint and passes its readiness probe.
    expect(page.locator("#job-state")).to_have_attribute("data-state", "running", timeout=180_000)
    job = Job.objects.filter(template__slug="k8s-tinylm-server").get()
    expect(page.locator("body")).to_contain_text("Emulated Kubernetes (demo)")
    expect(page.locator("body")).not_to_contain_text("ServerPanel")  # no template comment printed as text
    wait_for(reason_says(job, "1/1 pods ready"), timeout=240, what="the server's pod to be ready")
    (pod,) = job_pods(emulated_kube, job)
    assert pod["status"]["podIP"].startswith("127.") and pod["status"]["podIP"] != "127.0.0.1"
    assert pod["spec"]["nodeName"] == "emulated-node"

    # Try it: the prompt goes through the API server's service proxy to the pod, and the answer streams back.
    page.reload()
    page.fill("#try-it textarea", "And God said")
    page.click("#send-prompt")
    expect(page.locator("#answer")).to_have_attribute("data-done", "1", timeout=120_000)
    assert page.locator("#answer").inner_text().strip()
    expect(page.locator("#answer")).not_to_have_class("error")

    # Scale to 3: three server processes, each ready behind the Service.
    page.fill("#server input[name=replicas]", "3")
    page.click("#scale")
    wait_for(reason_says(job, "3/3 pods ready"), timeout=300, what="three ready replicas")
    pods = [p for p in job_pods(emulated_kube, job) if not p["metadata"]["labels"].get("gpulab.io/role")]
    assert len({p["status"]["podIP"] for p in pods}) == 3
    page.reload()
    expect(page.locator("body")).to_contain_text("3/3 pods ready")

    # Load test: the load generator's Job runs against the Service and its report shows on the page.
    page.fill("#load-test input[name=prompts]", "12")
    page.fill("#load-test input[name=concurrency]", "3")
    page.fill("#load-test input[name=output_len]", "8")
    page.click("#start-load-test")
    expect(page.locator("#report-rps")).to_be_visible(timeout=300_000)
    expect(page.locator("#load-test-report")).to_contain_text("12 completed, 0 failed")

    # Logs: the server's own output, per pod and container.
    streams = api_for(alice).get(f"/api/v1/jobs/{job.pk}/streams/").json()["streams"]
    assert len([s for s in streams if s.endswith("/server")]) == 3
    expect(page.locator("#log")).to_contain_text("Uvicorn running", timeout=60_000)
    page.screenshot(path=SHOTS / "k8s-emulated-server-laptop.png", full_page=True)

    # Delete: the portal deletes every object of the job, and the node stops the processes.
    page.click("#cancel")
    page.click("#confirm-cancel")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "cancelled", timeout=120_000)
    wait_for(lambda: not job_pods(emulated_kube, job), timeout=60, what="the pods to go")
    expect(page.locator("body")).to_contain_text("Emulated Kubernetes (demo)")
    page.goto(f"{live_server.url}/jobs/")
    expect(page.locator("body")).to_contain_text("Emulated Kubernetes (demo)")
