"""MLBatch's batch inference on Kubernetes, through the real pages, API and worker, against the emulated API server.

Where the AppWrapper CRD is registered (from its published schema, with Kueue's), the tests play Kueue, the AppWrapper
controller (tests/integration/appwrapper.py) and the kubelet: statuses written as the API types define them, and the
load generator's log served per container as the kubelet serves it. On a cluster without the CRD the same template
is a plain Job. Either way the load generator's TTFT and TPOT reach the job page and the comparison."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from clusters.models import AuthMethod, Cluster, ClusterAccount
from jobs.models import Job, LoadTestResult, QueueStep
from tests.test_compare import api_url, url
from tests.vllm_bench import vllm_block

from .appwrapper import AW, AppWrapperController
from .conftest import K8S_TOKEN, wait_for
from .k8s import Emulator
from .kueue import Kueue

NS = "gpulab-hpc"
QUEUE = "gpulab-hpc"
TEMPLATE = "k8s-vllm-benchmark"
PARAMS = {"model": "Qwen/Qwen2.5-0.5B-Instruct", "num_prompts": 64, "max_concurrency": 16}


@pytest.fixture(scope="session")
def aw_kube(tmp_path_factory):
    emulator = Emulator(tmp_path_factory.mktemp("appwrapper"), mpi=False, kueue=True)
    yield emulator
    emulator.stop()


@pytest.fixture
def mlbatch_cluster(transactional_db, course, aw_kube):
    """A cluster where Test connection found Kueue and the AppWrapper CRD, as MLBatch sets one up."""
    aw_kube.deny()
    aw_kube.pend(QUEUE, [])
    cluster = Cluster.objects.create(
        name="mlbatch",
        title="MLBatch cluster",
        kind="kubernetes",
        kind_settings={
            "kube_addons": {"kueue": True, "kueue_visibility": True, "appwrapper": True},
            "kueue_cohort": "default-cohort",
        },
    )
    account = ClusterAccount(cluster=cluster, username="gpulab-portal", auth_method=AuthMethod.KUBECONFIG)
    account.set_secret(aw_kube.kubeconfig(K8S_TOKEN))
    account.save()
    course.clusters.add(cluster)
    return cluster


def launch(api_for, user, cluster: str, **params) -> Job:
    body = {"template": TEMPLATE, "cluster": cluster, "params": {**PARAMS, **params}}
    response = api_for(user).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def owned(kube: Emulator, collection: str, job: Job) -> list[dict]:
    return kube.items(collection, f"gpulab.io/job={job.pk}")


def running(name: str) -> list[dict]:
    return [{"name": name, "state": {"running": {"startedAt": "2026-03-01T09:00:00Z"}}} for name in ("vllm", name)]


def ended(code: int) -> list[dict]:
    return [{"name": name, "state": {"terminated": {"exitCode": code}}} for name in ("vllm", "load-generator")]


def page(client, job: Job) -> str:
    return html.unescape(client.get(job.get_absolute_url()).content.decode())


def report(client, job: Job):
    return client.get(reverse("jobs:load_test_report", args=[job.pk]))


def reason_has(job: Job, text: str) -> Job:
    def said():
        found = Job.objects.get(pk=job.pk)
        return found if text in found.scheduler_reason else None

    return wait_for(said, what=f"the reason “{text}”")


def test_test_connection_names_the_appwrapper_permissions_the_portal_lacks(login, admin_user, mlbatch_cluster, aw_kube):
    aw_kube.deny("create appwrappers")
    found = login(admin_user).get(reverse("admin:cluster_test", args=[mlbatch_cluster.pk])).content.decode()
    assert (
        "Missing permission: create appwrappers.workload.codeflare.dev — needed to start jobs wrapped in AppWrappers"
        in html.unescape(found)
    )


def test_an_appwrapper_waits_in_kueue_runs_is_reset_after_a_failed_pod_and_its_ttft_reaches_the_page(
    worker, login, client, api_for, alice, bob, ta, course, mlbatch_cluster, k8s_templates, aw_kube, job_state
):
    kueue, controller = Kueue(aw_kube), AppWrapperController(aw_kube)
    job = job_state(launch(api_for, alice, "mlbatch"), "pending")
    # The AppWrapper is what Kueue admits: labelled for the course's queue, created suspended (the API server checked
    # it against the published AppWrapper schema); nothing else runs yet.
    (wrapper,) = owned(aw_kube, f"{AW}/namespaces/{NS}/appwrappers", job)
    assert wrapper["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == QUEUE and wrapper["spec"]["suspend"] is True
    assert owned(aw_kube, f"/apis/batch/v1/namespaces/{NS}/jobs", job) == []
    aw_path = controller.path(NS, wrapper["metadata"]["name"])
    controller.take_up(aw_path)
    workload = kueue.workload_for(wrapper, kind="AppWrapper")
    kueue.no_quota(workload, more=1)
    reason_has(job, "it needs 1 more nvidia.com/gpu than the course's ClusterQueue has free")

    # Kueue lets the AppWrapper go; its controller creates the Job it wraps, which carries the portal's labels.
    kueue.admit(workload, aw_path, QUEUE)
    assert aw_kube.get(aw_path)["spec"]["suspend"] is False
    batch, job_path = controller.resume(aw_path)
    assert batch["metadata"]["ownerReferences"][0]["kind"] == "AppWrapper"
    assert "kueue.x-k8s.io/queue-name" not in batch["metadata"]["labels"] and "suspend" not in batch["spec"]
    aw_kube.start_pod(batch, "infer-1", phase="Running", ready=True, containerStatuses=running("load-generator"))
    controller.pods_ready(aw_path, running=1)
    kueue.pods_ready(workload)
    job_state(job, "running")

    # A pod fails: the AppWrapper resets, deleting its Job, and the job runs on, saying why.
    aw_kube.set_pod(NS, "infer-1", phase="Failed", containerStatuses=ended(137))
    controller.found_failed_pods(aw_path)
    controller.reset(aw_path, job_path, [(NS, "infer-1")])
    job = reason_has(job, "The AppWrapper is retrying (retry 1): a pod of its Job failed")
    assert job.state == "running"
    batch, job_path = controller.resume_after_reset(aw_path)
    aw_kube.start_pod(batch, "infer-2", phase="Running", ready=True, containerStatuses=running("load-generator"))
    controller.pods_ready(aw_path, running=1)

    # The load generator's results, as its container's log holds them, on the job page.
    assert "load generator in the job is running…" in report(login(alice), job).content.decode()
    aw_kube.write_log(NS, "infer-2", "load-generator", "Starting main benchmark run...\n" + vllm_block())
    shown = report(login(alice), job).content.decode()
    assert 'id="report-rps">12.38<' in shown and "51.8 / 141.1 ms" in shown and "9.5 / 11.8 ms" in shown
    assert "512 completed, 0 failed" in shown
    assert LoadTestResult.objects.get(job=job).figures["ttft_p95_ms"] == 141.06

    aw_kube.set_pod(NS, "infer-2", phase="Succeeded", containerStatuses=ended(0))
    controller.succeed(aw_path, succeeded=1)
    job = job_state(job, "completed")
    wait_for(lambda: QueueStep.objects.filter(job=job, condition="AppWrapperSucceeded").exists(), what="the end")
    timeline = page(login(alice), job)
    for step in (
        "Admitted by Kueue: its pods may start",
        "AppWrapper let go by Kueue: its quota is reserved",
        "The AppWrapper created its Job",
        "The AppWrapper sees its pods ready (1 pods running; 0 pods succeeded)",
        "Unhealthy: a pod of its Job failed",
        "Resetting: the AppWrapper deleted its Job to try again",
        "Succeeded: all of its pods finished; the AppWrapper released its quota",
    ):
        assert step in timeline, step
    assert 'id="load-test"' in timeline and "Load generator" in timeline

    # The same figures for the course's TA; nothing for another student or someone not signed in.
    assert "51.8 / 141.1 ms" in report(login(ta), job).content.decode()
    assert report(login(bob), job).status_code == 404 and login(bob).get(job.get_absolute_url()).status_code == 404
    client.logout()
    assert report(client, job).status_code == 302


def test_cancelling_a_waiting_appwrapper_deletes_it(
    worker, api_for, alice, mlbatch_cluster, k8s_templates, aw_kube, job_state
):
    job = job_state(launch(api_for, alice, "mlbatch"), "pending")
    assert len(owned(aw_kube, f"{AW}/namespaces/{NS}/appwrappers", job)) == 1
    assert api_for(alice).post(f"/api/v1/jobs/{job.pk}/cancel/").status_code == 202
    job_state(job, "cancelled")
    assert owned(aw_kube, f"{AW}/namespaces/{NS}/appwrappers", job) == []


def test_without_the_crd_the_template_is_a_plain_job_and_two_concurrencies_compare(
    worker, login, client, api_for, alice, bob, course, k8s_cluster, k8s_templates, kube, job_state
):
    kube.clear_requests()
    runs = []
    for concurrency, rps, ttft_p95 in ((16, "12.38", "141.06"), (64, "20.50", "480.20")):
        job = job_state(launch(api_for, alice, "k8s", max_concurrency=concurrency), "pending", "running")
        (batch,) = owned(kube, f"/apis/batch/v1/namespaces/{NS}/jobs", job)
        assert batch["kind"] == "Job" and "suspend" not in batch["spec"]  # no Kueue here, nothing to wait for
        env = {e["name"]: e["value"] for e in batch["spec"]["template"]["spec"]["containers"][1]["env"]}
        assert env["MAX_CONCURRENCY"] == str(concurrency)
        pod = f"plain-{concurrency}"
        kube.start_pod(batch, pod, phase="Running", ready=True, containerStatuses=running("load-generator"))
        job_state(job, "running")
        said = {"Request throughput (req/s)": rps, "P95 TTFT (ms)": ttft_p95}
        block = vllm_block(**said, **{"Maximum request concurrency": str(concurrency)})
        kube.write_log(NS, pod, "load-generator", block)
        kube.write_log(NS, pod, "vllm", vllm_block(**{"Request throughput (req/s)": "999.00"}))  # not the report
        kube.set_pod(NS, pod, phase="Succeeded", containerStatuses=ended(0))
        kube.set_status(
            f"/apis/batch/v1/namespaces/{NS}/jobs/{batch['metadata']['name']}",
            {"conditions": [{"type": "Complete", "status": "True"}]},
        )
        job = job_state(job, "completed")
        # Kept when the job ended, from the log the portal kept: no page had to be opened.
        kept = wait_for(lambda j=job: LoadTestResult.objects.filter(job=j).first(), what="the kept load test")
        assert kept.figures["requests_per_s"] == float(rps) and kept.figures["ttft_p95_ms"] == float(ttft_p95)
        runs.append(job)
    assert not [r for r in kube.requests() if "appwrappers" in r]  # a cluster without the CRD is never asked

    first, second = runs
    kube.call("DELETE", f"/api/v1/namespaces/{NS}/pods/plain-16")  # the cluster's copy is gone: the kept one shows
    assert "12.38" in report(login(alice), first).content.decode()
    compared = html.unescape(login(alice).get(url(first, second)).content.decode())
    assert "141.1 ms" in compared and "480.2 ms" in compared and "12.38" in compared
    figures = [run["load_test"] for run in api_for(alice).get(api_url(first, second)).json()["runs"]]
    assert [(f["requests_per_s"], f["ttft_p95_ms"], f["concurrency"]) for f in figures] == [
        (12.38, 141.06, 16),
        (20.5, 480.2, 64),
    ]
    assert login(bob).get(url(first, second)).status_code == 404  # another student's runs: none to compare
