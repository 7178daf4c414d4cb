"""KubeRay's RayJob without a cluster: the template's checks (published schema, pod templates as core/v1, values only
as data or inert entrypoint words, a dashboard only the portal reaches), its resources, its place in Kueue, and the
portal's state and words for each of KubeRay v1.4.2's jobDeploymentStatus and jobStatus values."""

from __future__ import annotations

import pytest
import yaml

from clusters.backends.kinds.kubernetes import kueue
from clusters.backends.kinds.kubernetes import ray as kube_ray
from clusters.backends.kinds.kubernetes.manifests import (
    ManifestContext,
    ManifestError,
    pod_specs,
    render_manifests,
    requested_resources,
)
from core.choices import JobState
from core.templating.params import parse_schema
from jobs.builtin import builtin_definitions

CTX = ManifestContext(
    job_id="3f2a9c1e-0000-4000-8000-000000000001", namespace="course-hpc", owner="alice", course="hpc"
)
FINETUNE = next(d for d in builtin_definitions() if d["slug"] == "k8s-ray-finetune")
SCHEMA = parse_schema(FINETUNE["parameters"])
DEFAULTS = {p.name: p.default for p in SCHEMA}


def render(body: str = FINETUNE["body"], **values) -> dict:
    (rayjob,) = render_manifests(body, SCHEMA, {**DEFAULTS, **values}, CTX)
    return rayjob


def refused(body: str, match: str, **values) -> None:
    with pytest.raises(ManifestError, match=match):
        render(body, **values)


def test_the_builtin_template_is_a_rayjob_whose_pods_all_carry_the_jobs_labels():
    rayjob = render(gpus=0, max_steps=500)
    assert (rayjob["apiVersion"], rayjob["kind"], rayjob["metadata"]["name"]) == (
        "ray.io/v1",
        "RayJob",
        "gpulab-3f2a9c1e",
    )
    assert rayjob["spec"]["entrypoint"] == (
        "python /app/trainer/train.py --model tiny --max_steps 500 --lr 0.0001 --batch_size 32 --precision bf16 "
        "--data_dir /runs --data . --run_dir /runs/latest"
    )
    pods = list(pod_specs(rayjob))
    assert [pod["containers"][0]["name"] for pod in pods] == ["ray-head", "ray-worker", "ray-job-submitter"]
    templates = [
        rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"],
        rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"],
        rayjob["spec"]["submitterPodTemplate"],
    ]
    for template in templates:
        assert template["metadata"]["labels"]["gpulab.io/job"] == CTX.job_id
        assert template["metadata"]["labels"]["gpulab.io/workload"] == "RayJob"
    # The head (1 CPU, 2 GiB), the worker (4 CPU, 8 GiB, the GPU) and the submitter (0.5 CPU, 1 GiB).
    wanted = requested_resources([render()])
    assert (wanted.gpus, wanted.cpu_millis, wanted.memory_bytes, wanted.pods) == (1, 5500, 11 * 2**30, 3)


def test_kuberays_default_submitter_and_autoscaled_workers_count_at_their_most():
    spec = render()
    del spec["spec"]["submitterPodTemplate"]
    spec["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    spec["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(maxReplicas=3, numOfHosts=2)
    wanted = requested_resources([spec])
    assert (wanted.pods, wanted.gpus, wanted.cpu_millis) == (1 + 6 + 1, 6, 1000 + 6 * 4000 + 1000)


def test_an_invalid_rayjob_or_pod_template_is_refused_naming_the_field():
    refused(FINETUNE["body"].replace("        minReplicas: 1\n", ""), "not a valid ray.io/v1 RayJob: .*minReplicas")
    refused(FINETUNE["body"].replace("containerPort: 6379", "containerPort: six"), r"pod template is not valid.*six")
    refused(
        FINETUNE["body"].replace("shutdownAfterJobFinishes: true", "shutdownAfterJobFinishes: yes please"),
        "spec.shutdownAfterJobFinishes: 'yes please' is not of type 'boolean'",
    )


@pytest.mark.parametrize(
    "change, match",
    [
        (
            ('rayStartParams: {num-cpus: "0"}', 'rayStartParams: {num-cpus: "0"}\n      enableIngress: true'),
            "enableIngress would publish the Ray dashboard",
        ),
        (
            ('rayStartParams: {num-cpus: "0"}', 'rayStartParams: {num-cpus: "0"}\n      serviceType: NodePort'),
            "must be ClusterIP",
        ),
        (
            (
                'rayStartParams: {num-cpus: "0"}',
                'rayStartParams: {num-cpus: "0"}\n      headService: {metadata: {name: x}}',
            ),
            "headService is not allowed",
        ),
        (
            (
                "shutdownAfterJobFinishes: true",
                "shutdownAfterJobFinishes: true\n  clusterSelector: {ray.io/cluster: other}",
            ),
            "must bring its own Ray cluster",
        ),
        (
            ("shutdownAfterJobFinishes: true", "shutdownAfterJobFinishes: true\n  submissionMode: InteractiveMode"),
            "submissionMode InteractiveMode is not allowed",
        ),
    ],
)
def test_a_dashboard_the_portal_would_not_be_the_only_way_to_is_refused(change, match):
    assert change[0] in FINETUNE["body"]
    refused(FINETUNE["body"].replace(*change), match)


def test_a_rayjob_with_hostpath_or_privilege_anywhere_is_refused():
    claim = 'persistentVolumeClaim: {claimName: "{{ checkpoint_claim }}"}'
    assert claim in FINETUNE["body"]
    refused(FINETUNE["body"].replace(claim, "hostPath: {path: /}"), "hostPath volumes are not allowed")
    context = 'securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: ["ALL"]}}'
    assert context in FINETUNE["body"]
    refused(FINETUNE["body"].replace(context, "securityContext: {privileged: true}"), "privileged containers")


@pytest.mark.parametrize(
    "change, match",
    [
        (("--run_dir /runs/{{ run }}", "--run_dir /runs/{{ run }}; rm -rf /runs/{{ run }}"), "argument of rm"),
        (("--model {{ model }}", '--model "{{ model }}"'), "inside double quotes"),
        (("--model {{ model }}", "--model $({{ model }})"), "entrypoint"),
        (
            (
                "entrypointNumGpus: {{ gpus }}",
                'entrypointNumGpus: {{ gpus }}\n  runtimeEnvYAML: "env_vars: {A: {{ run }}}"',
            ),
            "spec.runtimeEnvYAML cannot hold a placeholder",
        ),
        (
            ("entrypointNumGpus: {{ gpus }}", 'entrypointNumGpus: {{ gpus }}\n  metadata: {run: "{{ run }}"}'),
            "spec.metadata cannot hold a placeholder",
        ),
        (
            ('rayStartParams: {num-cpus: "0"}', 'rayStartParams: {num-cpus: "{{ gpus }}"}'),
            "rayStartParams of group head cannot hold a placeholder",
        ),
        (
            ("- name: ray-worker\n", '- name: ray-worker\n                args: ["--x", "{{ run }}"]\n'),
            "container commands and arguments cannot hold a placeholder",
        ),
    ],
)
def test_a_value_stands_only_as_data_or_as_an_inert_entrypoint_word(change, match):
    assert change[0] in FINETUNE["body"]
    refused(FINETUNE["body"].replace(*change), match)


def test_a_choice_that_is_not_one_plain_word_cannot_stand_in_the_entrypoint():
    parameters = [
        {**p, "choices": ["tiny", "small two"]} if p["name"] == "model" else p for p in FINETUNE["parameters"]
    ]
    schema = parse_schema(parameters)
    values = {p.name: p.default for p in schema} | {"model": "small two"}
    with pytest.raises(ManifestError, match="'small two' of Model size is not one plain word"):
        render_manifests(FINETUNE["body"], schema, values, CTX)


def test_in_a_course_queue_a_rayjob_is_suspended_and_held_to_what_kueue_takes():
    rayjob = render()
    kueue.put_in_queue([rayjob], "gpulab-hpc", "gpulab-3f2a9c1e")
    assert rayjob["spec"]["suspend"] is True and rayjob["metadata"]["labels"][kueue.QUEUE_LABEL] == "gpulab-hpc"
    for change, match in (
        ({"shutdownAfterJobFinishes": False}, "shutdownAfterJobFinishes: true"),
        ({"rayClusterSpec": {**rayjob["spec"]["rayClusterSpec"], "enableInTreeAutoscaling": True}}, "autoscale"),
    ):
        with pytest.raises(ManifestError, match=match):
            kueue.put_in_queue([{**rayjob, "spec": {**rayjob["spec"], **change}}], "q", "gpulab-3f2a9c1e")
    with pytest.raises(ManifestError, match="must be named"):
        kueue.put_in_queue([render()], "q", "gpulab-other")


# -- states ------------------------------------------------------------------------------------------------------
def rayjob(**status) -> dict:
    return {"metadata": {"name": "gpulab-3f2a9c1e"}, "spec": {"backoffLimit": 1}, "status": status}


def pod(node_type: str, phase: str, **extra) -> dict:
    labels = {"ray.io/node-type": node_type, "ray.io/group": "trainer"} if node_type else {}
    return {"metadata": {"labels": labels}, "status": {"phase": phase, "startTime": "2026-11-28T10:00:00Z", **extra}}


UP = {"rayClusterName": "gpulab-3f2a9c1e-x7k2p", "dashboardURL": "gpulab-3f2a9c1e-x7k2p-head-svc.ns.svc:8265"}


@pytest.mark.parametrize(
    "status, pods, state, raw, words",
    [
        ({}, [], JobState.PENDING, "New", "Waiting for KubeRay to take up the RayJob"),
        (
            {"jobDeploymentStatus": "Suspended"},
            [],
            JobState.PENDING,
            "Suspended",
            "Suspended: KubeRay makes its Ray cluster",
        ),
        (
            {"jobDeploymentStatus": "Initializing", "rayClusterName": "c"},
            [],
            JobState.PENDING,
            "Initializing",
            "Starting the Ray cluster: KubeRay is creating its pods",
        ),
        (
            {"jobDeploymentStatus": "Initializing"},
            [pod("head", "Running"), pod("worker", "Pending")],
            JobState.PENDING,
            "Initializing",
            "Starting the Ray cluster: worker (trainer): Waiting for a node",
        ),
        (
            {"jobDeploymentStatus": "Retrying", "failed": 1},
            [],
            JobState.PENDING,
            "Retrying",
            "KubeRay retries it on a new Ray cluster (attempt 2 of 2)",
        ),
        (
            {"jobDeploymentStatus": "Running", "jobStatus": "PENDING", **UP},
            [pod("head", "Running")],
            JobState.RUNNING,
            "Running",
            "Ray cluster gpulab-3f2a9c1e-x7k2p is up; the Ray job waits to start (PENDING)",
        ),
        (
            {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING", **UP},
            [],
            JobState.RUNNING,
            "Running",
            "The Ray job runs on Ray cluster gpulab-3f2a9c1e-x7k2p",
        ),
        (
            {"jobDeploymentStatus": "Running", "jobStatus": "SUCCEEDED", **UP},
            [],
            JobState.RUNNING,
            "Running",
            "The Ray job ended (SUCCEEDED); KubeRay is finishing up",
        ),
        (
            {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", **UP},
            [],
            JobState.COMPLETED,
            "Complete",
            "The Ray job succeeded",
        ),
        (
            {"jobDeploymentStatus": "Complete", "jobStatus": "STOPPED", **UP},
            [],
            JobState.CANCELLED,
            "Stopped",
            "The Ray job was stopped on its Ray cluster",
        ),
        (
            {
                "jobDeploymentStatus": "Failed",
                "jobStatus": "FAILED",
                "reason": "AppFailed",
                "message": "Job entrypoint command failed with exit code 3, last available logs",
                **UP,
            },
            [],
            JobState.FAILED,
            "AppFailed",
            "The Ray job failed: Job entrypoint command failed with exit code 3",
        ),
        (
            {"jobDeploymentStatus": "Failed", "jobStatus": "RUNNING", "reason": "DeadlineExceeded", **UP},
            [],
            JobState.TIMED_OUT,
            "DeadlineExceeded",
            "The Ray job ran past the job's time limit",
        ),
        (
            {
                "jobDeploymentStatus": "Failed",
                "reason": "SubmissionFailed",
                **UP,
                "message": "Job submission has failed. Reason: BackoffLimitExceeded.",
            },
            [],
            JobState.FAILED,
            "SubmissionFailed",
            "The Ray job could not be submitted to its Ray cluster: Job submission has failed.",
        ),
        (
            {
                "jobDeploymentStatus": "Failed",
                "reason": "DeadlineExceeded",
                "rayClusterName": "c",
                "message": "The RayJob has passed the activeDeadlineSeconds.",
            },
            [],
            JobState.FAILED,
            "DeadlineExceeded",
            "The Ray cluster never came up; KubeRay stopped it at the job's time limit",
        ),
    ],
)
def test_each_kuberay_status_is_a_portal_state_with_its_reason_in_words(status, pods, state, raw, words):
    found = kube_ray.status_of("ns/3f2a9c1e-0000-4000-8000-000000000001", rayjob(**status), pods)
    assert (found.state, found.raw_state) == (state, raw)
    assert found.reason.startswith(words), found.reason


def test_a_failed_ray_job_keeps_its_exit_code_and_kuberays_message_in_its_ending():
    status = {
        "jobDeploymentStatus": "Failed",
        "jobStatus": "FAILED",
        "reason": "AppFailed",
        "message": "Job entrypoint command failed with exit code 3, last available logs:\nTraceback …",
        "endTime": "2026-11-28T10:05:00Z",
        **UP,
    }
    found = kube_ray.status_of("x", rayjob(**status), [pod("", "Succeeded")])
    assert found.exit_code == 3 and found.finished_at is not None and found.started_at is not None
    assert found.ending == (
        "The Ray job failed. (KubeRay: Job entrypoint command failed with exit code 3, last available logs:) "
        "The log shows why."
    )


def test_a_ray_cluster_that_cannot_make_its_pods_says_why_and_fails_with_it():
    raycluster = {
        "status": {
            "conditions": [
                {"type": "HeadPodReady", "status": "False", "reason": "HeadPodNotFound"},
                {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreateHeadPod", "message": "forbidden"},
            ]
        }
    }
    starting = rayjob(jobDeploymentStatus="Initializing", rayClusterName="c")
    assert kube_ray.needs_cluster(starting, []) and not kube_ray.needs_cluster(starting, [pod("head", "Pending")])
    found = kube_ray.status_of("x", starting, [], raycluster)
    assert found.reason == "Starting the Ray cluster: KubeRay cannot create its pods (FailedCreateHeadPod: forbidden)"
    failed = rayjob(jobDeploymentStatus="Failed", reason="DeadlineExceeded", rayClusterName="c", message="passed")
    assert kube_ray.needs_cluster(failed, [])
    found = kube_ray.status_of("x", failed, [], raycluster)
    assert found.state == JobState.FAILED and found.ending == (
        "The Ray cluster never came up: KubeRay cannot create its pods (FailedCreateHeadPod: forbidden); KubeRay "
        "stopped it at the job's time limit. (KubeRay: passed)"
    )


def test_the_rayjob_crd_is_kuberays_published_v1_schema_trimmed():
    from clusters.backends.kinds.kubernetes import crds

    entry = crds.definitions()[("ray.io/v1", "RayJob")]
    spec = entry["schema"]["properties"]["spec"]["properties"]
    workers = spec["rayClusterSpec"]["properties"]["workerGroupSpecs"]["items"]
    assert workers["required"] == ["groupName", "maxReplicas", "minReplicas", "template"]
    assert spec["rayClusterSpec"]["required"] == ["headGroupSpec"]
    status = entry["schema"]["properties"]["status"]["properties"]
    assert {"jobStatus", "jobDeploymentStatus", "reason", "message", "rayClusterName", "dashboardURL"} <= set(status)
    assert ("ray.io/v1", "RayCluster") in crds.definitions()
    assert yaml.safe_dump(entry["crd"]["metadata"]) == "name: rayjobs.ray.io\n"


@pytest.mark.parametrize(
    ("change", "fix"),
    [
        (
            ("--model {{ model }}", '--model "{{ model }}"'),
            "write it outside the quotes (the portal quotes values itself).",
        ),
        (
            ("python /app/trainer", "MODEL={{ model }} python /app/trainer"),
            "pass the value as an argument of a command instead.",
        ),
    ],
)
def test_an_entrypoint_refusal_names_no_variable_a_ray_head_does_not_have(change, fix):
    """A batch script gets every value as $GPULAB_P_<name> too, and its refusals may say to use that; a RayJob's
    entrypoint gets no such variable, so its refusals say what works there."""
    assert change[0] in FINETUNE["body"]
    with pytest.raises(ManifestError) as refusal:
        render(FINETUNE["body"].replace(*change, 1))
    assert str(refusal.value).endswith(fix) and "GPULAB_P_" not in str(refusal.value)
