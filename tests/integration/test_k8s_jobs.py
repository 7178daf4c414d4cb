"""Kubernetes jobs through the real pages and API and a real worker, against kmock's emulated API server over TLS.

The tests play the kubelet and the controllers: they create the pods a Deployment or Job would make and set
statuses, then check what the portal shows and what it created, scaled and deleted.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from urllib.parse import parse_qs, urlparse

import pytest
from django.urls import reverse

from clusters.models import AuthMethod, Cluster, ClusterAccount
from jobs.models import Job
from tests.kind_settings import set_cluster, set_course

from .conftest import ROOT, wait_for
from .k8s import Emulator

NS = "gpulab-hpc"
SERVER_PARAMS = {
    "gpus": 1,
    "replicas": 1,
    "max_replicas": 2,
    "image": "gpulab/tinylm-server:0.1.0-cpu",
    "checkpoint_claim": "tinylm-checkpoints",
}


def launch(api_for, user, slug: str, params: dict) -> Job:
    response = api_for(user).post(
        "/api/v1/jobs/", {"template": slug, "cluster": "k8s", "params": params}, format="json"
    )
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def owned(kube: Emulator, collection: str, job: Job) -> list[dict]:
    return kube.items(f"{collection}", f"gpulab.io/job={job.pk}")


def deployments(kube, job):
    return owned(kube, f"/apis/apps/v1/namespaces/{NS}/deployments", job)


def test_server_from_the_launch_page_waits_runs_scales_and_is_cancelled(
    worker, login, api_for, alice, course, k8s_cluster, k8s_templates, kube, job_state
):
    template = k8s_templates["k8s-tinylm-server"]
    form = {"cluster": k8s_cluster.pk, **{f"param_{k}": v for k, v in SERVER_PARAMS.items()}}
    launch_page = login(alice).get(reverse("jobs:launch", args=[course.slug, template.slug])).content.decode()
    assert "Lab Kubernetes (shared GPUs: each is 1/4 of a physical GPU)" in launch_page
    assert login(alice).post(reverse("jobs:launch", args=[course.slug, template.slug]), form).status_code == 302
    job = job_state(Job.objects.get(), "pending")
    assert job.scheduler_id == f"{NS}/{job.pk}"
    assert job.gpus == 2  # 1 per replica, autoscaled up to 2

    # The portal made the course namespace, its quota and default limits.
    namespace = kube.get(f"/api/v1/namespaces/{NS}")
    assert namespace["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpulab-portal"
    quota = kube.get(f"/api/v1/namespaces/{NS}/resourcequotas/gpulab-quota")["spec"]["hard"]
    assert quota["requests.nvidia.com/gpu"] == "4" and quota["pods"] == "16" and quota["persistentvolumeclaims"] == "4"
    limits = kube.get(f"/api/v1/namespaces/{NS}/limitranges/gpulab-limits")["spec"]["limits"][0]
    assert limits["max"] == {"cpu": "16", "memory": "96Gi"}
    # Every object carries the job's labels, in the forced namespace.
    (deployment,) = deployments(kube, job)
    (service,) = owned(kube, f"/api/v1/namespaces/{NS}/services", job)
    (hpa,) = owned(kube, f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers", job)
    for obj in (deployment, service, hpa):
        assert obj["metadata"]["namespace"] == NS and obj["metadata"]["labels"]["gpulab.io/owner"] == "alice"

    # Pending, with the scheduler's reason put in words.
    unschedulable = Emulator.unschedulable("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
    kube.start_pod(deployment, "srv-1", **unschedulable)
    wait_for(
        lambda: "no node has a free nvidia.com/gpu" in Job.objects.get(pk=job.pk).scheduler_reason,
        what="the pending reason",
    )
    page = login(alice).get(job.get_absolute_url()).content.decode()
    assert "no node has a free nvidia.com/gpu" in page and "shared GPU" in page
    # Why it waits, through the same kind interface: the pod's condition, with no queue place or estimate to give.
    wait = wait_for(lambda: api_for(alice).get(f"/api/v1/jobs/{job.pk}/").json()["wait"], what="the job's wait")
    assert "no node has a free nvidia.com/gpu" in wait["reason"] and wait["position"] is None
    assert wait["estimated_start"] is None and "in no queue order" in wait["note"]
    assert f"kubectl -n {NS} port-forward service/{service['metadata']['name']} 11434:11434" in page

    kube.set_pod(NS, "srv-1", phase="Running", ready=True)
    job = job_state(job, "running")
    assert "1/1 pods ready" in job.scheduler_reason and job.started_at

    # The log, per container, by offset.
    kube.write_log(NS, "srv-1", "server", "listening on 0.0.0.0:11434\nready\n")
    assert api_for(alice).get(f"/api/v1/jobs/{job.pk}/streams/").json() == {"streams": ["srv-1/server"]}
    first = api_for(alice).get(f"/api/v1/jobs/{job.pk}/log/?offset=0").json()
    assert first["data"] == "listening on 0.0.0.0:11434\nready\n" and first["offset"] == len(first["data"])
    rest = api_for(alice).get(f"/api/v1/jobs/{job.pk}/log/?offset=27").json()
    assert rest["data"] == "ready\n"
    past = api_for(alice).get(f"/api/v1/jobs/{job.pk}/log/?offset={10**30}").json()
    assert past["data"] == "" and past["offset"] == 33  # the log's size, not a restart from 0

    # Scale from the job page: the Deployment and its autoscaler follow, and the GPUs held are recounted.
    assert login(alice).post(reverse("jobs:scale", args=[job.pk]), {"replicas": 3}).status_code == 302
    name = deployment["metadata"]["name"]
    assert kube.get(f"/apis/apps/v1/namespaces/{NS}/deployments/{name}")["spec"]["replicas"] == 3
    hpa_now = kube.get(f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers/{name}")["spec"]
    assert (hpa_now["minReplicas"], hpa_now["maxReplicas"]) == (3, 3)
    job.refresh_from_db()
    assert job.gpus == 3 and job.events.filter(message__startswith="Scaled to 3").exists()
    # Above the course quota (4 GPUs per student): refused, nothing changes.
    response = api_for(alice).post(f"/api/v1/jobs/{job.pk}/scale/", {"replicas": 5}, format="json")
    assert response.status_code == 409 and "allows 4" in response.json()["detail"]
    assert kube.get(f"/apis/apps/v1/namespaces/{NS}/deployments/{name}")["spec"]["replicas"] == 3

    # Cancel deletes everything with the job's label and waits until it is gone.
    assert api_for(alice).post(f"/api/v1/jobs/{job.pk}/cancel/").status_code == 202
    job_state(job, "cancelled")
    for collection in (
        "/apis/apps/v1/namespaces/{}/deployments",
        "/api/v1/namespaces/{}/services",
        "/api/v1/namespaces/{}/pods",
    ):
        assert owned(kube, collection.format(NS), job) == []
    assert owned(kube, f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers", job) == []


def test_training_job_follows_its_pods_and_the_job_conditions(
    worker, api_for, alice, k8s_cluster, k8s_templates, kube, job_state
):
    params = {"gpus": 1, "max_steps": 50, "image": "gpulab/tinylm-trainer:0.1.0-cpu"}
    done = launch(api_for, alice, "k8s-tinylm-train", params)
    failing = launch(api_for, alice, "k8s-tinylm-train", params)
    job_state(done, "pending")
    job_state(failing, "pending")
    (batch,) = owned(kube, f"/apis/batch/v1/namespaces/{NS}/jobs", done)
    assert batch["spec"]["activeDeadlineSeconds"] == 120 * 60  # the template's time limit
    (batch_failing,) = owned(kube, f"/apis/batch/v1/namespaces/{NS}/jobs", failing)

    kube.start_pod(batch, "train-ok", phase="Running")
    kube.start_pod(batch_failing, "train-bad", phase="Running")
    job_state(done, "running")
    job_state(failing, "running")

    ended = {"name": "trainer", "state": {"terminated": {"exitCode": 0}}}
    kube.set_pod(NS, "train-ok", phase="Succeeded", containerStatuses=[ended])
    kube.set_status(
        f"/apis/batch/v1/namespaces/{NS}/jobs/{batch['metadata']['name']}",
        {"conditions": [{"type": "Complete", "status": "True"}], "completionTime": "2026-11-21T10:05:00Z"},
    )
    crashed = {"name": "trainer", "state": {"terminated": {"exitCode": 3}}}
    kube.set_pod(NS, "train-bad", phase="Failed", containerStatuses=[crashed])
    kube.set_status(
        f"/apis/batch/v1/namespaces/{NS}/jobs/{batch_failing['metadata']['name']}",
        {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]},
    )
    done = job_state(done, "completed")
    assert done.exit_code == 0 and done.finished_at
    failing = job_state(failing, "failed")
    assert failing.exit_code == 3 and "exit code 3" in failing.error


def test_forbidden_object_fails_the_submission_and_leaves_nothing_behind(
    worker, api_for, alice, k8s_cluster, k8s_templates, kube, job_state
):
    kube.deny("create horizontalpodautoscalers")  # the Deployment and Service are created first
    job = job_state(launch(api_for, alice, "k8s-tinylm-server", SERVER_PARAMS), "submit_failed")
    assert "horizontalpodautoscalers.autoscaling is forbidden" in job.error
    assert deployments(kube, job) == [] and owned(kube, f"/api/v1/namespaces/{NS}/services", job) == []


def test_a_namespace_deleted_behind_the_portals_back_is_made_again(
    worker, api_for, alice, k8s_cluster, k8s_templates, kube, job_state
):
    first = job_state(launch(api_for, alice, "k8s-tinylm-server", SERVER_PARAMS), "pending")
    kube.call("DELETE", f"/api/v1/namespaces/{NS}")  # an operator cleans up; the portal still remembers it
    second = job_state(launch(api_for, alice, "k8s-tinylm-server", SERVER_PARAMS), "pending")
    assert kube.get(f"/api/v1/namespaces/{NS}")["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpulab-portal"
    assert deployments(kube, second) and first.scheduler_id != second.scheduler_id


def test_unreachable_api_server_fails_the_submission_with_its_reason(
    worker, api_for, alice, course, k8s_templates, kube, job_state
):
    cluster = Cluster.objects.create(
        name="k8s", kind="kubernetes", api_url="https://127.0.0.1:9", kind_settings={"ca_certificate": kube.ca_pem}
    )
    account = ClusterAccount(cluster=cluster, username="portal", auth_method=AuthMethod.TOKEN)
    account.set_secret("token-for-a-server-that-is-down")
    account.save()
    course.clusters.add(cluster)
    job = job_state(launch(api_for, alice, "k8s-tinylm-server", SERVER_PARAMS), "submit_failed", timeout=120)
    assert "did not answer" in job.error
    assert job.events.filter(message__contains="Trying again").exists()


def test_other_students_get_404_for_every_action(
    worker, login, api_for, alice, bob, carol, k8s_cluster, k8s_templates, kube, job_state
):
    job = job_state(launch(api_for, alice, "k8s-tinylm-server", SERVER_PARAMS), "pending")
    (deployment,) = deployments(kube, job)
    kube.start_pod(deployment, "iso-1", phase="Running", ready=True)
    job_state(job, "running")
    for intruder in (bob, carol):
        web, api = login(intruder), api_for(intruder)
        assert web.get(job.get_absolute_url()).status_code == 404
        assert web.get(reverse("jobs:log", args=[job.pk])).status_code == 404
        assert web.get(reverse("jobs:load_test_report", args=[job.pk])).status_code == 404
        for action in ("scale", "try_it", "load_test", "cancel"):
            assert (
                web.post(reverse(f"jobs:{action}", args=[job.pk]), {"replicas": 0, "prompt": "hi"}).status_code == 404
            )
        for path in ("", "log/", "streams/"):
            assert api.get(f"/api/v1/jobs/{job.pk}/{path}").status_code == 404
        for path in ("scale/", "cancel/"):
            assert api.post(f"/api/v1/jobs/{job.pk}/{path}", {"replicas": 0}, format="json").status_code == 404
    # A crafted log stream naming a pod outside the job is refused, even for the owner.
    stranger = {
        "metadata": deployment["metadata"],
        "spec": {"template": {"spec": deployment["spec"]["template"]["spec"]}},
    }
    kube.start_pod(stranger, "not-this-job", phase="Running")
    kube.write_log(NS, "not-this-job", "server", "someone else's secrets\n")
    response = api_for(alice).get(f"/api/v1/jobs/{job.pk}/log/?stream=not-this-job/server")
    assert response.status_code == 503 and "does not belong" in response.json()["detail"]
    assert (
        kube.get(f"/apis/apps/v1/namespaces/{NS}/deployments/{deployment['metadata']['name']}")["spec"]["replicas"] == 1
    )
    job.refresh_from_db()
    assert job.state == "running" and job.cancel_requested_at is None


@pytest.mark.parametrize("how", ["kubeconfig", "token"])
def test_test_connection_reports_version_and_missing_permissions(how, login, admin_user, k8s_cluster, kube):
    if how == "token":
        k8s_cluster.api_url = kube.url
        set_cluster(k8s_cluster, ca_certificate=kube.ca_pem).save()
        account = k8s_cluster.service_account()
        account.auth_method = AuthMethod.TOKEN
        account.set_secret("portal-sa-token-for-the-token-path")
        account.save()
    kube.deny("create namespaces", "get pods/log")
    page = login(admin_user).get(reverse("admin:cluster_test", args=[k8s_cluster.pk])).content.decode()
    assert "Kubernetes v1.34.1" in page and "Connected, but permissions are missing" in page
    assert "Missing permission: create namespaces" in page and "needed to create per-course namespaces" in page
    assert "Missing permission: get pods/log" in page and "MPI Operator (MPIJob): installed" in page
    k8s_cluster.refresh_from_db()
    assert k8s_cluster.server_version == "v1.34.1" and k8s_cluster.kind_settings["has_metrics_api"]
    kube.deny()
    page = login(admin_user).get(reverse("admin:cluster_test", args=[k8s_cluster.pk])).content.decode()
    assert "Connected; all permissions present" in page


def test_a_ca_that_does_not_sign_the_server_is_refused_in_words(login, admin_user, k8s_cluster, kube, tmp_path):
    from .k8s import make_tls

    _, _, other_ca = make_tls(tmp_path)
    k8s_cluster.api_url = kube.url
    set_cluster(k8s_cluster, ca_certificate=other_ca).save()
    account = k8s_cluster.service_account()
    account.auth_method = AuthMethod.TOKEN
    account.set_secret("portal-sa-token-for-the-token-path")
    account.save()
    page = login(admin_user).get(reverse("admin:cluster_test", args=[k8s_cluster.pk])).content.decode()
    assert "certificate the stored CA does not sign" in page


def test_mpi_hello_is_offered_only_where_the_mpi_operator_is_installed(
    login, alice, course, k8s_cluster, k8s_templates
):
    assert "MPI hello (Kubernetes" in login(alice).get(reverse("jobs:catalog")).content.decode()
    set_cluster(k8s_cluster, has_mpi_operator=False, save=True)
    assert "MPI hello (Kubernetes" not in login(alice).get(reverse("jobs:catalog")).content.decode()
    response = login(alice).get(reverse("jobs:launch", args=[course.slug, "k8s-mpi-hello"]))
    assert "No cluster of this course can run MPIJobs (it needs the MPI Operator)" in response.content.decode()


def test_try_it_streams_the_bundled_servers_answer_and_load_test_reports(
    worker, login, api_for, alice, k8s_cluster, k8s_templates, kube, job_state, tinylm_server
):
    job = job_state(launch(api_for, alice, "k8s-tinylm-server", SERVER_PARAMS), "pending")
    (deployment,) = deployments(kube, job)
    (service,) = owned(kube, f"/api/v1/namespaces/{NS}/services", job)
    kube.start_pod(deployment, "srv-try", phase="Running", ready=True)
    job_state(job, "running")
    # The cluster network: the Service's proxy reaches the real server.
    kube.route_service(NS, service["metadata"]["name"], tinylm_server)

    web = login(alice)
    kube.clear_requests()  # the emulator is shared by the session's tests
    response = web.post(reverse("jobs:try_it", args=[job.pk]), {"prompt": "In the beginning"})
    assert response.status_code == 200 and response.streaming
    answer = b"".join(response.streaming_content).decode()
    assert answer.strip() and "[error" not in answer
    proxied = [r for r in kube.requests() if "/proxy/" in r]
    assert proxied == [
        f"POST /api/v1/namespaces/{NS}/services/{service['metadata']['name']}:11434/proxy/v1/chat/completions"
    ]
    empty = web.post(reverse("jobs:try_it", args=[job.pk]), {"prompt": "  "})
    assert empty.status_code == 400 and "Write a prompt" in empty.content.decode()

    # Load test: the portal creates the load generator's Job next to the server…
    started = web.post(reverse("jobs:load_test", args=[job.pk]), {"prompts": 8, "concurrency": 2, "output_len": 8})
    assert started.status_code == 302
    (loadtest,) = kube.items(f"/apis/batch/v1/namespaces/{NS}/jobs", f"gpulab.io/job={job.pk},gpulab.io/role=loadtest")
    # …and the page it lands on waits for that test by name while the Job has no pod yet.
    (name,) = parse_qs(urlparse(started["Location"]).query)["load_test"]
    assert name == loadtest["metadata"]["name"]
    landed = web.get(started["Location"]).content.decode()
    assert f"?expect={name}" in landed
    for field, value in (("prompts", 8), ("concurrency", 2), ("output_len", 8)):  # the form keeps what was asked
        assert f'name="{field}" value="{value}"' in landed
    assert (
        f"{name} is starting"
        in web.get(reverse("jobs:load_test_report", args=[job.pk]), {"expect": name}).content.decode()
    )
    command = loadtest["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--base-url") + 1] == f"http://{service['metadata']['name']}:11434"
    # …the kubelet runs it: here, the real load generator against the real server, its output as the pod's log.
    kube.start_pod(loadtest, "load-1", phase="Running")
    assert "load-1 is running" in web.get(reverse("jobs:load_test_report", args=[job.pk])).content.decode()
    argv = [str(ROOT / "workloads/.venv/bin/python"), str(ROOT / "workloads/inference/loadgen.py")]
    args = [*command[2:]]
    args[args.index("--base-url") + 1] = tinylm_server
    output = subprocess.run([*argv, *args], capture_output=True, text=True, timeout=120, check=True).stdout
    kube.write_log(NS, "load-1", "load-generator", output)
    kube.set_pod(NS, "load-1", phase="Succeeded")
    report = web.get(reverse("jobs:load_test_report", args=[job.pk])).content.decode()
    figures = json.loads(output.strip().splitlines()[-1].split(" ", 1)[1])
    shown = float(re.search(r'id="report-rps">([0-9.]+)<', report).group(1))
    assert figures["completed"] == 8 and abs(shown - figures["requests_per_s"]) <= 0.01 and "TTFT p50" in report
    # The server's status ignores its load tests.
    job.refresh_from_db()
    assert job.state == "running"


def test_one_pod_list_per_namespace_per_poll_cycle(
    worker, alice, bob, course, k8s_cluster, k8s_templates, kube, job_state
):
    """Three students' servers in three namespaces (one per student): a poll makes three list calls, no more."""
    from core.choices import JobState
    from core.course_choices import NamespaceMode
    from jobs.launch import launch as launch_job
    from jobs.polling import poll_cluster

    set_course(course, namespace_mode=NamespaceMode.PER_STUDENT).save()
    backend_jobs = []
    for user in (alice, bob, alice, bob):
        job = launch_job(
            user,
            course=course,
            template=k8s_templates["k8s-tinylm-server"],
            cluster=k8s_cluster,
            raw_params=SERVER_PARAMS | {"gpus": 0},
        )
        job = job_state(job, JobState.PENDING)
        assert job.scheduler_id.startswith(f"gpulab-hpc-{user.username}/")
        (deployment,) = owned(kube, f"/apis/apps/v1/namespaces/{job.scheduler_id.split('/')[0]}/deployments", job)
        kube.start_pod(deployment, f"pod-{job.short_id}", phase="Running", ready=True)
        backend_jobs.append(job)
    kube.clear_requests()
    report = poll_cluster(k8s_cluster.pk)
    calls = kube.requests()
    assert report.polled == 4 and not report.error
    # (The session's worker may poll too; its cycles make the same calls, never one per job.)
    namespace_lists = {
        f"GET /api/v1/namespaces/gpulab-hpc-{name}/pods?labelSelector=app.kubernetes.io/managed-by%3Dgpulab-portal"
        for name in ("alice", "bob")
    }
    assert set(calls) == namespace_lists
    assert {Job.objects.get(pk=j.pk).state for j in backend_jobs} == {"running"}


def test_pod_and_node_usage_come_from_the_metrics_api(alice, k8s_cluster, kube):
    from clusters.kinds import get_backend

    namespace = "gpulab-metrics"
    kube.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    labels = {"app.kubernetes.io/managed-by": "gpulab-portal", "gpulab.io/job": "5e0b6c3a-0000-4000-8000-00000000000a"}
    usage = [
        {"name": "server", "usage": {"cpu": "250000000n", "memory": "2048Ki"}},
        {"name": "side", "usage": {"cpu": "5m", "memory": "1Mi"}},
    ]
    kube.call(
        "POST",
        f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods",
        {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "PodMetrics",
            "metadata": {"name": "p", "namespace": namespace, "labels": labels},
            "containers": usage,
        },
    )
    kube.call(
        "POST",
        "/apis/metrics.k8s.io/v1beta1/nodes",
        {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "NodeMetrics",
            "metadata": {"name": "gpu-node-1"},
            "usage": {"cpu": "3", "memory": "4Gi"},
        },
    )
    kube.clear_requests()
    backend = get_backend(k8s_cluster)
    (pod,) = backend.task_usage([f"{namespace}/{labels['gpulab.io/job']}", f"{namespace}/{uuid.uuid4()}", "not/an-id"])
    assert (pod.task, pod.job_id) == (f"{namespace}/p", labels["gpulab.io/job"])
    assert (pod.cpu_millis, pod.memory_bytes) == (255.0, 2048 * 1024 + 2**20)
    assert len(kube.requests()) == 1  # one list call per namespace, not per job
    nodes = {n.node: n for n in backend.node_usage()}
    assert nodes["gpu-node-1"].cpu_millis == 3000 and nodes["gpu-node-1"].memory_bytes == 4 * 2**30


def test_a_server_past_its_time_limit_is_stopped_as_timed_out(
    worker, api_for, alice, k8s_cluster, k8s_templates, kube, job_state
):
    from datetime import timedelta

    from django.utils import timezone

    job = job_state(launch(api_for, alice, "k8s-tinylm-server", SERVER_PARAMS), "pending")
    (deployment,) = deployments(kube, job)
    kube.start_pod(deployment, "overdue-1", phase="Running", ready=True)
    job = job_state(job, "running")
    limit = job.template.max_minutes
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(minutes=limit + 1))
    job = job_state(job, "timed_out")
    assert f"time limit of {limit} minutes" in job.error
    assert deployments(kube, job) == [] and owned(kube, f"/api/v1/namespaces/{NS}/pods", job) == []
    assert job.events.filter(kind="cancel", message__contains="time limit").count() == 1
