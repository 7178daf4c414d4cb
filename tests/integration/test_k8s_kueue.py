"""Kubernetes with Kueue, through the real pages and API and a real worker, against the emulated API server with
Kueue's and the operators' CRDs registered from their published schemas. The tests play Kueue's controller
(tests/integration/kueue.py) and the kubelet, and give the order Kueue's visibility API reports."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from clusters.models import AuthMethod, Cluster, ClusterAccount
from jobs.models import Job, JobWait, QueueStep
from tests.kind_settings import set_cluster, set_course

from .conftest import K8S_TOKEN, wait_for
from .k8s import Emulator
from .kueue import KUEUE, Kueue

NS = "gpulab-hpc"
QUEUE = "gpulab-hpc"  # the course's ClusterQueue and LocalQueue, which the portal manages
TRAIN = {"gpus": 1, "max_steps": 50, "image": "gpulab/tinylm-trainer:0.1.0-cpu"}


@pytest.fixture(scope="session")
def kueue_kube(tmp_path_factory):
    emulator = Emulator(tmp_path_factory.mktemp("kueue"), mpi=False, kueue=True)
    yield emulator
    emulator.stop()


@pytest.fixture
def kueue_cluster(transactional_db, course, kueue_kube):
    """A cluster where Test connection found Kueue; course queues join cohort “lab”."""
    kueue_kube.deny()
    kueue_kube.pend(QUEUE, [])
    cluster = Cluster.objects.create(
        name="k8s",
        title="Kueue cluster",
        kind="kubernetes",
        kind_settings={
            "kube_addons": {"kueue": True, "kueue_visibility": True, "training_operator": True},
            "kueue_cohort": "lab",
        },
    )
    account = ClusterAccount(cluster=cluster, username="gpulab-portal", auth_method=AuthMethod.KUBECONFIG)
    account.set_secret(kueue_kube.kubeconfig(K8S_TOKEN))
    account.save()
    course.clusters.add(cluster)
    return cluster


@pytest.fixture
def kueue(kueue_kube):
    return Kueue(kueue_kube)


def launch(api_for, user) -> Job:
    response = api_for(user).post(
        "/api/v1/jobs/", {"template": "k8s-tinylm-train", "cluster": "k8s", "params": TRAIN}, format="json"
    )
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def batch_job(kube: Emulator, job: Job) -> tuple[dict, str]:
    (found,) = kube.items(f"/apis/batch/v1/namespaces/{NS}/jobs", f"gpulab.io/job={job.pk}")
    return found, f"/apis/batch/v1/namespaces/{NS}/jobs/{found['metadata']['name']}"


def page_of(login, user, job: Job) -> str:
    return html.unescape(login(user).get(job.get_absolute_url()).content.decode())


def reason_has(job: Job, text: str) -> Job:
    def said():
        found = Job.objects.get(pk=job.pk)
        return found if text in found.scheduler_reason else None

    return wait_for(said, what=f"the reason “{text}”")


def test_test_connection_finds_kueue_the_operators_and_what_the_portal_may_not_do(
    login, admin_user, kueue_cluster, kueue_kube
):
    kueue_kube.deny("get localqueues/pendingworkloads", "create clusterqueues")
    page = html.unescape(login(admin_user).get(reverse("admin:cluster_test", args=[kueue_cluster.pk])).content.decode())
    assert "Kueue (kueue.x-k8s.io/v1beta1): installed: jobs go in their course's queue" in page
    assert "Kueue's visibility API: installed: students see their place in the queue" in page
    for found in ("Training Operator (PyTorchJob): installed", "KubeRay (RayJob): installed", "AppWrapper: installed"):
        assert found in page
    assert (
        "Missing permission: get localqueues/pendingworkloads.visibility.kueue.x-k8s.io — needed to tell students "
        "their place in the queue (without it: “position unknown”)" in page
    )
    assert "Missing permission: create clusterqueues.kueue.x-k8s.io — needed to create the ClusterQueues" in page
    kueue_cluster.refresh_from_db()
    assert kueue_cluster.kind_settings["kube_addons"] == {
        "kueue": True,
        "kueue_visibility": True,
        "training_operator": True,
        "kuberay": True,
        "appwrapper": True,
    }


def test_a_job_waits_in_its_course_queue_is_admitted_runs_and_finishes(
    worker, login, api_for, alice, bob, course, kueue_cluster, k8s_templates, kueue_kube, kueue, job_state
):
    job = job_state(launch(api_for, alice), "pending")
    # The course's queue, made by the portal, valid against Kueue's schema (the API server checked it on create).
    cluster_queue = kueue_kube.get(f"{KUEUE}/clusterqueues/{QUEUE}")["spec"]
    assert cluster_queue["cohort"] == "lab" and cluster_queue["preemption"] == {
        "withinClusterQueue": "LowerOrNewerEqualPriority",
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "Never"},
    }
    gpus = cluster_queue["resourceGroups"][0]["flavors"][0]["resources"][2]
    assert gpus == {"name": "nvidia.com/gpu", "nominalQuota": 8}  # 4 per student, 2 students
    assert kueue_kube.get(f"{KUEUE}/namespaces/{NS}/localqueues/{QUEUE}")["spec"] == {"clusterQueue": QUEUE}
    # The Job carries its queue and waits suspended for Kueue.
    found, job_path = batch_job(kueue_kube, job)
    assert found["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == QUEUE and found["spec"]["suspend"] is True

    workload = kueue.workload_for(found)
    kueue.no_quota(workload, more=1)
    kueue.usage(QUEUE, used=8, pending=1, admitted=2)
    job = reason_has(job, "it needs 1 more nvidia.com/gpu than the course's ClusterQueue has free")
    assert job.state == "pending"

    kueue.admit(workload, job_path, QUEUE)
    assert kueue_kube.get(job_path)["spec"]["suspend"] is False  # Kueue started it
    kueue_kube.start_pod(found, "train-q1", phase="Running")
    kueue.pods_ready(workload)
    job_state(job, "running")
    wait_for(lambda: QueueStep.objects.filter(job=job, condition="PodsReady").exists(), what="pods ready")

    kueue_kube.set_pod(
        NS,
        "train-q1",
        phase="Succeeded",
        containerStatuses=[{"name": "trainer", "state": {"terminated": {"exitCode": 0}}}],
    )
    # Kueue marks the Workload finished as the pods end; the portal keeps that step, then follows the Job to its end
    # (a step Kueue takes after the portal saw the job end is not followed: the job is no longer polled).
    kueue.finish(workload)
    wait_for(lambda: QueueStep.objects.filter(job=job, condition="Finished").exists(), what="finished in Kueue")
    kueue_kube.set_status(job_path, {"conditions": [{"type": "Complete", "status": "True"}]})
    job = job_state(job, "completed")
    timeline = page_of(login, alice, job)
    for step in (
        "Kueue reserved quota for it (Quota reserved in ClusterQueue gpulab-hpc)",
        "Admitted by Kueue: its pods may start",
        "All of its pods are ready",
        "Finished in Kueue (Succeeded)",
    ):
        assert step in timeline
    assert 'id="queue-counts"' not in timeline  # never preempted nor requeued

    # The admin takes the cluster out of its cohort: the next launch brings the course's queue along.
    set_cluster(kueue_cluster, kueue_cohort="", save=True)
    job_state(launch(api_for, alice), "pending")
    assert "cohort" not in kueue_kube.get(f"{KUEUE}/clusterqueues/{QUEUE}")["spec"]


def test_waiting_third_of_five_with_quota_policy_and_no_estimate_then_without_visibility(
    worker, login, api_for, alice, course, kueue_cluster, k8s_templates, kueue_kube, kueue, job_state
):
    job = job_state(launch(api_for, alice), "pending")
    found, _ = batch_job(kueue_kube, job)
    workload = kueue.workload_for(found)
    kueue.no_quota(workload, more=1)
    kueue.usage(QUEUE, used=4, pending=5, admitted=2)
    others = [{"namespace": NS, "name": f"job-other-{n}", "localQueueName": QUEUE} for n in range(4)]
    mine = {"namespace": NS, "name": workload.rsplit("/", 1)[1], "localQueueName": QUEUE}
    kueue_kube.pend(QUEUE, [*others[:2], mine, *others[2:]])

    # The two writes above are not one: a poll may read the ClusterQueue before its count and the list after it.
    wait = wait_for(
        lambda: JobWait.objects.filter(job=job, position=3, pending_in_partition=5).first(), what="the place in queue"
    )
    assert wait.partition == f"ClusterQueue {QUEUE}" and wait.estimate_learnt
    assert wait.reason.startswith(
        "3rd of 5 waiting in the course's queue (LocalQueue gpulab-hpc); 3rd of 5 in ClusterQueue gpulab-hpc."
    )
    page = page_of(login, alice, job)
    assert "3</strong> of 5 waiting in ClusterQueue gpulab-hpc" in page
    assert "ClusterQueue gpulab-hpc uses 4 of its 4 GPUs." in page
    assert "a job of the course with higher priority, or an older one of equal priority, may stop a newer one" in page
    assert "In cohort lab, GPUs lent to other courses are taken back at once" in page
    assert "too few to tell" in page and "(0 of the 5 the portal needs)" in page
    api_wait = api_for(alice).get(f"/api/v1/jobs/{job.pk}/").json()["wait"]
    assert api_wait["position"] == 3 and api_wait["estimated_start"] is None and api_wait["estimate_learnt"] is True

    kueue_kube.deny("get localqueues/pendingworkloads")
    wait = wait_for(
        lambda: JobWait.objects.filter(job=job, reason__startswith="Position unknown").first(), what="no visibility"
    )
    assert wait.position is None
    assert "may not read Kueue's visibility API (get localqueues/pendingworkloads" in page_of(login, alice, job)


def test_preempted_requeued_and_admitted_again_on_borrowed_quota_all_on_the_timeline(
    worker,
    login,
    api_for,
    alice,
    instructor,
    admin_user,
    course,
    kueue_cluster,
    k8s_templates,
    kueue_kube,
    kueue,
    job_state,
):
    job = job_state(launch(api_for, alice), "pending")
    found, job_path = batch_job(kueue_kube, job)
    workload = kueue.workload_for(found)
    kueue.usage(QUEUE, used=10, borrowed=2, admitted=3)
    kueue.admit(workload, job_path, QUEUE)
    kueue_kube.start_pod(found, "train-p1", phase="Running")
    job_state(job, "running")
    reason_has(job, "The course's queue borrows 2 GPU(s) from cohort lab; they can be reclaimed when another course")

    # Another course takes back what it lent: Kueue evicts the job and the Job controller removes its pod.
    kueue.preempt(workload, job_path, "InCohortReclamation")
    kueue_kube.call("DELETE", f"/api/v1/namespaces/{NS}/pods/train-p1")
    job = job_state(job, "pending")
    reason_has(job, "Waiting to be admitted again: it was")
    kueue.requeue(workload)
    wait_for(lambda: QueueStep.objects.filter(job=job, condition="Requeued").exists(), what="requeued")
    kueue.admit(workload, job_path, QUEUE)
    kueue_kube.start_pod(found, "train-p2", phase="Running")
    job_state(job, "running")
    wait_for(lambda: QueueStep.objects.filter(job=job, condition="Admitted").count() == 2, what="admitted again")

    page = page_of(login, alice, job)
    steps = [
        "Admitted by Kueue: its pods may start",
        "Stopped by kueue to make room for another job (preempted)",
        "Preempted: another course took back GPUs this course had borrowed from it",
        "Back in the queue after being preempted",
        "Admitted by Kueue: its pods may start",
    ]
    at = 0
    for step in steps:  # in this order on the timeline
        at = page.index(step, at) + len(step)
    assert "In the cluster's queue: preempted 1 time, requeued 1 time." in page

    # The course's queue on its page and its class dashboard, for its teachers.
    for where in (reverse("courses:jobs", args=[course.slug]), reverse("telemetry:dashboard", args=[course.slug])):
        panel = html.unescape(login(instructor).get(where).content.decode())
        assert (
            "The course's queue on Kueue cluster" in panel
            and 'gpulab-hpc <span class="small muted">in cohort lab' in panel
        )
        assert "<strong>10</strong> in use of a quota of 4; <strong>2</strong> borrowed from the cohort" in panel
        assert "3 admitted, 0 pending" in panel
        assert '<dd class="queue-preemptions">1</dd>' in panel
    assert login(alice).get(reverse("courses:jobs", args=[course.slug])).status_code == 404  # teachers only
    # And live on the course's admin page.
    admin_page = html.unescape(
        login(admin_user).get(reverse("admin:courses_course_change", args=[course.pk])).content.decode()
    )
    assert (
        "Kueue cluster: ClusterQueue gpulab-hpc uses 10 of its 4 GPUs, 2 borrowed from cohort lab; 3 admitted"
        in admin_page
    )


def test_a_course_mapped_to_a_missing_local_queue_is_refused_with_the_reason(
    worker, api_for, alice, course, kueue_cluster, k8s_templates, kueue_kube, job_state
):
    set_course(course, kueue_local_queue="team-a").save()
    job = job_state(launch(api_for, alice), "submit_failed")
    assert "The course's Kueue queue (LocalQueue “team-a”) does not exist in namespace gpulab-hpc" in job.error
    assert kueue_kube.items(f"/apis/batch/v1/namespaces/{NS}/jobs", f"gpulab.io/job={job.pk}") == []


DDP = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: "{{ job_name }}"}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: pytorch
              image: gpulab/tinylm-trainer:0.1.0-cpu
              args: ["--max_steps", "{{ max_steps }}", "--run_dir", "/tmp/run"]
              resources: {limits: {cpu: "1", memory: 2Gi, nvidia.com/gpu: 1}}
    Worker:
      replicas: {{ workers }}
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: pytorch
              image: gpulab/tinylm-trainer:0.1.0-cpu
              args: ["--max_steps", "{{ max_steps }}", "--run_dir", "/tmp/run"]
              resources: {limits: {cpu: "1", memory: 2Gi, nvidia.com/gpu: 1}}
"""


def test_a_pytorchjob_waits_in_the_queue_and_fails_with_its_failed_worker_in_words(
    worker, api_for, alice, course, kueue_cluster, kueue_kube, kueue, job_state
):
    from jobs.models import JobTemplate

    parameters = [
        {"name": "workers", "type": "int", "label": "Workers", "default": 1, "min": 1, "max": 3},
        {"name": "max_steps", "type": "int", "label": "Steps", "default": 50, "min": 1, "max": 1000},
    ]
    template = JobTemplate.objects.create(
        slug="ddp-pytorchjob",
        name="DDP",
        backend="kubernetes",
        body=DDP,
        parameters=parameters,
        max_gpus=4,
        status=JobTemplate.Status.PUBLISHED,
    )
    template.courses.add(course)
    response = api_for(alice).post(
        "/api/v1/jobs/", {"template": template.slug, "cluster": "k8s", "params": {"workers": 1}}, format="json"
    )
    assert response.status_code == 201, response.content
    job = job_state(Job.objects.get(pk=response.json()["id"]), "pending")
    assert job.gpus == 2
    (found,) = kueue_kube.items(f"/apis/kubeflow.org/v1/namespaces/{NS}/pytorchjobs", f"gpulab.io/job={job.pk}")
    assert found["spec"]["runPolicy"] == {"suspend": True, "activeDeadlineSeconds": 120 * 60}
    assert found["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == QUEUE
    path = f"/apis/kubeflow.org/v1/namespaces/{NS}/pytorchjobs/{found['metadata']['name']}"

    # Kueue admits it (its Workload owned by the PyTorchJob); the operator starts a Master and a Worker.
    workload = kueue.workload_for(found, kind="PyTorchJob")
    kueue.admit(workload, path, QUEUE, gpus=2, suspend_field=("runPolicy", "suspend"))
    assert kueue_kube.get(path)["spec"]["runPolicy"]["suspend"] is False
    for replica in ("Master", "Worker"):
        pod = {
            "metadata": {"namespace": NS},
            "spec": {"template": found["spec"]["pytorchReplicaSpecs"][replica]["template"]},
        }
        kueue_kube.start_pod(pod, f"ddp-{replica.lower()}-0", phase="Running")
    job_state(job, "running")

    # The worker fails; the operator fails the job and stops the master (cleanPodPolicy Running).
    crashed = [{"name": "pytorch", "state": {"terminated": {"exitCode": 1}}}]
    kueue_kube.set_pod(NS, "ddp-worker-0", phase="Failed", containerStatuses=crashed)
    kueue_kube.set_pod(
        NS,
        "ddp-master-0",
        phase="Failed",
        containerStatuses=[{"name": "pytorch", "state": {"terminated": {"exitCode": 137}}}],
    )
    failed = f"PyTorchJob {NS}/{found['metadata']['name']} is failed because 1 Worker replica(s) failed."
    kueue_kube.set_status(
        path,
        {
            "conditions": [
                {"type": "Created", "status": "True", "reason": "PyTorchJobCreated"},
                {"type": "Running", "status": "False", "reason": "PyTorchJobRunning"},
                {"type": "Failed", "status": "True", "reason": "PyTorchJobFailed", "message": failed},
            ],
            "replicaStatuses": {"Master": {"active": 0}, "Worker": {"failed": 1}},
        },
    )
    job = job_state(job, "failed")
    assert job.scheduler_reason == f"{failed} (Worker: 1 failed)" and job.exit_code == 137  # the first pod's (Master)
    assert job.events.filter(to_state="failed", message__contains="(Worker: 1 failed)").exists()
