"""Kubernetes pieces that need no API server: job states from pods and conditions, namespace plans, resource
limits at launch, streamed answers, kubeconfig checks and the credential form."""

import uuid

import pytest

from clusters.backends.base import BackendError
from clusters.backends.kinds.kubernetes import launch as k8s_launch
from clusters.backends.kinds.kubernetes import status as kube_status
from clusters.backends.kinds.kubernetes.api import check_kubeconfig
from clusters.backends.kinds.kubernetes.endpoints import answer_text
from clusters.backends.kinds.kubernetes.namespaces import namespace_for, plan_for
from clusters.forms import ClusterAccountForm
from clusters.models import Cluster
from core.choices import JobState
from core.course_choices import NamespaceMode
from courses.models import Enrollment, Role
from jobs.models import JobTemplate
from tests.kind_settings import set_course

SID = "gpulab-hpc/3f2a9c1e-0000-4000-8000-000000000001"


def pod(phase="Pending", labels=None, **status):
    return {"metadata": {"name": "p", "labels": labels or {}}, "status": {"phase": phase, **status}}


def test_unschedulable_pods_explain_themselves():
    waiting = pod(
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
            }
        ]
    )
    status = kube_status.from_pods(SID, "Job", [waiting])
    assert status.state == JobState.PENDING
    assert status.reason.startswith("Not scheduled: no node has a free nvidia.com/gpu right now")
    assert "3 Insufficient nvidia.com/gpu" in status.reason


def test_image_pull_errors_name_the_container():
    waiting = pod(
        containerStatuses=[
            {"name": "server", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}}
        ]
    )
    assert kube_status.from_pods(SID, "Deployment", [waiting]).reason == "server: the image cannot be pulled: not found"


def test_deployment_readiness_and_crashes_are_reported():
    ready = pod("Running", conditions=[{"type": "Ready", "status": "True"}])
    crashing = pod(
        "Running",
        conditions=[{"type": "Ready", "status": "False"}],
        containerStatuses=[{"name": "server", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
    )
    status = kube_status.from_pods(SID, "Deployment", [ready, crashing])
    assert status.state == JobState.RUNNING
    assert status.reason == "1/2 pods ready; server: a container keeps crashing; the log shows why"


def test_batch_jobs_end_by_their_conditions():
    ended = pod("Failed", containerStatuses=[{"name": "t", "state": {"terminated": {"exitCode": 137}}}])
    assert kube_status.from_pods(SID, "Job", [ended]) is None  # the Job's conditions decide
    deadline = {
        "kind": "Job",
        "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]},
    }
    status = kube_status.from_workload(SID, deadline, [ended])
    assert (status.state, status.exit_code) == (JobState.TIMED_OUT, 137)
    complete = {"kind": "Job", "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    assert kube_status.from_workload(SID, complete, []).state == JobState.COMPLETED
    assert kube_status.from_workload(SID, {"kind": "Job", "status": {}}, []).state == JobState.PENDING


def test_a_deployment_over_quota_waits_with_the_quota_message():
    deployment = {
        "kind": "Deployment",
        "spec": {"replicas": 2},
        "status": {
            "conditions": [
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "message": 'pods "x" is forbidden: exceeded quota: gpulab-quota',
                }
            ]
        },
    }
    status = kube_status.from_workload(SID, deployment, [])
    assert status.state == JobState.PENDING and "exceeded quota: gpulab-quota" in status.reason
    scaled_down = {"kind": "Deployment", "spec": {"replicas": 0}, "status": {}}
    assert kube_status.from_workload(SID, scaled_down, []).reason == "Scaled to 0 replicas"


@pytest.mark.django_db
def test_namespace_per_course_or_per_student_with_quota_for_the_class(course, alice, bob, make_user):
    assert namespace_for(course, alice) == "gpulab-hpc"
    plan = plan_for(course, alice)
    assert plan.quota["requests.nvidia.com/gpu"] == str(course.max_gpus * 2)  # alice and bob
    assert plan.quota["requests.memory"] == "192Gi"  # the default 96 GiB per student
    assert plan.limits["max"] == {"cpu": "16", "memory": "96Gi"}
    set_course(course, namespace_mode=NamespaceMode.PER_STUDENT)
    long_name = make_user("Ángela_" + "x" * 80)
    Enrollment.objects.create(course=course, user=long_name, role=Role.STUDENT)
    assert plan_for(course, alice).quota["requests.nvidia.com/gpu"] == str(course.max_gpus)
    name = namespace_for(course, long_name)
    assert len(name) <= 63 and name.startswith("gpulab-hpc-ngela-x") and name != namespace_for(course, alice)
    assert plan_for(course, long_name).labels["gpulab.io/owner"].endswith("x")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("replicas", "memory", "message"),
    [
        (4, "1Gi", "allows 2 CPUs per student"),
        (1, "20Gi", "20 GiB of memory; HPC Lab allows 8 GiB per student"),
    ],
)
def test_resources_above_the_course_quota_are_refused_naming_the_limit(course, alice, replicas, memory, message):
    set_course(course, max_cpus=2, max_memory_gb=8)
    template = JobTemplate(
        slug="srv",
        backend="kubernetes",
        max_gpus=4,
        parameters=[{"name": "replicas", "type": "int", "default": 1, "min": 1, "max": 8}],
        body=(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: '{{ job_name }}'}\n"
            "spec:\n  replicas: {{ replicas }}\n  selector: {matchLabels: {app: a}}\n"
            "  template:\n    metadata: {labels: {app: a}}\n    spec:\n      containers:\n"
            f"        - {{name: s, image: i, resources: {{limits: {{cpu: '1', memory: {memory}}}}}}}\n"
        ),
    )
    with pytest.raises(k8s_launch.ResourcesRefused, match=message):
        k8s_launch.render(template, course, alice, {"replicas": replicas}, uuid.uuid4())


@pytest.mark.django_db
def test_an_ingress_is_added_when_the_course_has_an_ingress_host(course, alice):
    from jobs.builtin import builtin_definitions

    definition = next(d for d in builtin_definitions() if d["slug"] == "k8s-ollama")
    template = JobTemplate(**{k: definition[k] for k in ("slug", "backend", "body", "parameters", "endpoint_api")})
    values = {p["name"]: p["default"] for p in definition["parameters"]}
    set_course(course, ingress_host="lab.example.edu")
    rendered = k8s_launch.render(template, course, alice, values, uuid.UUID(int=7))
    assert "host: gpulab-00000000.lab.example.edu" in rendered.script
    assert "kind: Ingress" in rendered.script and "number: 11434" in rendered.script


def test_streamed_answers_become_text_for_both_apis():
    ollama = [b'{"response": "Hel', b'lo"}\n{"response": " w\xc3', b'\xb6rld", "done": false}\n{"done": true}\n']
    assert "".join(answer_text("ollama", iter(ollama))) == "Hello wörld"
    openai = [
        b'data: {"choices": [{"delta": {"content": "In the"}}]}\n\n',
        b'data: {"choices": [{"delta": {"content": " beginning"}}]}\n\ndata: [DONE]\n\n',
    ]
    assert "".join(answer_text("openai", iter(openai))) == "In the beginning"
    assert "model 'x' not found" in "".join(
        answer_text("openai", iter([b'{"error": {"message": "model \'x\' not found"}}']))
    )


def test_kubeconfigs_that_run_programs_are_refused():
    config = {
        "clusters": [{"name": "c", "cluster": {"server": "https://k8s"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"exec": {"command": "aws"}}}],
    }
    import json

    with pytest.raises(BackendError, match="logs in by running a program"):
        check_kubeconfig(json.dumps(config))
    with pytest.raises(BackendError, match="not valid YAML"):
        check_kubeconfig("{: nope")


@pytest.mark.django_db
def test_a_kubernetes_cluster_takes_only_kubernetes_credentials():
    cluster = Cluster.objects.create(
        name="k8s", kind="kubernetes", api_url="https://k8s.example.edu:6443", kind_settings={"kube_context": "lab"}
    )
    form = ClusterAccountForm({"cluster": cluster.pk, "username": "p", "auth_method": "password", "secret": "x"})
    assert not form.is_valid() and "takes: Bearer token (Kubernetes), kubeconfig (Kubernetes)" in str(form.errors)
    other_context = (
        '{"clusters": [{"name": "c", "cluster": {"server": "https://k"}}], "contexts": [{"name": "prod", '
        '"context": {"cluster": "c", "user": "u"}}], "users": [{"name": "u", "user": {"token": "t"}}]}'
    )
    form = ClusterAccountForm(
        {"cluster": cluster.pk, "username": "p", "auth_method": "kubeconfig", "secret": other_context}
    )
    assert not form.is_valid() and "no context lab; it has prod" in str(form.errors)


@pytest.mark.parametrize("model", ["library/../../etc", "a..b", "hf.co//x", "../llama3", ".hidden"])
def test_an_ollama_model_name_that_walks_a_path_is_refused_in_words(model):
    """The model name reaches `ollama pull` and the model store's paths: no `..` or `//` in it, whatever else."""
    from core.templating.params import parse_schema
    from jobs.builtin import builtin_definitions

    definition = next(d for d in builtin_definitions() if d["slug"] == "k8s-ollama")
    (param,) = [p for p in parse_schema(definition["parameters"]) if p.name == "model"]
    for good in ("llama3.1:8b", "library/llama3:latest", "hf.co/user/repo-gguf:q4_k_m"):
        assert param.clean(good) == good
    with pytest.raises(ValueError, match=r"with no \.\. or //"):
        param.clean(model)
