"""Kubernetes templates: values stay data, the portal's namespace and labels are forced, dangerous specs are refused,
and every object validates against the pinned Kubernetes schema."""

import json

import pytest
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from clusters.backends.kinds.kubernetes.manifests import (
    ManifestContext,
    ManifestError,
    render_manifests,
    requested_resources,
)
from core.templating.params import CONTROL_CHARS, parse_schema
from jobs.models import JobTemplate
from tests.template_forms import editor_data

CTX = ManifestContext(
    job_id="3f2a9c1e-0000-4000-8000-000000000001", namespace="course-hpc", owner="alice", course="hpc"
)
SCHEMA = parse_schema(
    [
        {"name": "replicas", "type": "int", "default": 1, "min": 1, "max": 4},
        {"name": "gpus", "type": "int", "default": 1, "min": 0, "max": 2},
        {"name": "model", "type": "string", "default": "tinylm", "max_length": 200},
        {"name": "debug", "type": "bool", "default": False},
    ]
)
DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "{{ job_name }}"
  namespace: kube-system
spec:
  replicas: {{ replicas }}
  selector: {matchLabels: {app: "{{ job_name }}"}}
  template:
    metadata: {labels: {app: "{{ job_name }}"}}
    spec:
      containers:
        - name: server
          image: gpulab/tinylm-server:0.1.0-cpu
          args: ["--model-name", "{{ model }}"]
          env:
            - {name: MODEL_NAME, value: "{{ model }}"}
            - {name: DEBUG, value: "debug-{{ debug }}"}
          resources:
            limits: {nvidia.com/gpu: {{ gpus }}, cpu: "2", memory: 4Gi}
---
apiVersion: v1
kind: Service
metadata: {name: "{{ job_name }}"}
spec:
  selector: {app: "{{ job_name }}"}
  ports: [{port: 11434, targetPort: 11434}]
"""


def render(body=DEPLOYMENT, **values):
    return render_manifests(body, SCHEMA, {"replicas": 2, "gpus": 1, "model": "tinylm", "debug": False, **values}, CTX)


def test_typed_values_namespace_and_labels():
    deployment, service = render()
    assert deployment["spec"]["replicas"] == 2 and isinstance(deployment["spec"]["replicas"], int)
    assert deployment["metadata"]["name"] == "gpulab-3f2a9c1e"
    assert deployment["metadata"]["namespace"] == "course-hpc" == service["metadata"]["namespace"]  # forced
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert labels["gpulab.io/job"] == CTX.job_id and labels["app.kubernetes.io/managed-by"] == "gpulab-portal"
    assert labels["app"] == "gpulab-3f2a9c1e" and deployment["metadata"]["labels"]["gpulab.io/owner"] == "alice"
    assert deployment["spec"]["template"]["spec"]["containers"][0]["env"][1]["value"] == "debug-false"


def test_a_template_parsed_once_gives_each_launch_its_own_objects_and_values():
    """The template's text is parsed once (manifests._parsed); each render fills a copy, so one launch's values never
    reach another's objects, nor what a later launch starts from."""
    first, _ = render(model="first")
    second, _ = render(model="second", replicas=3)
    assert first["spec"]["template"]["spec"]["containers"][0]["args"] == ["--model-name", "first"]
    assert second["spec"]["template"]["spec"]["containers"][0]["args"] == ["--model-name", "second"]
    assert (first["spec"]["replicas"], second["spec"]["replicas"]) == (2, 3)
    first["metadata"]["labels"]["tampered"] = "yes"
    assert "tampered" not in render()[0]["metadata"]["labels"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_values_that_look_like_yaml_stay_one_string(value):
    if CONTROL_CHARS.search(value):
        return  # refused by validation before rendering (see test_params)
    deployment, service = render(model=value)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["--model-name", value]
    assert container["env"][0] == {"name": "MODEL_NAME", "value": value}
    assert json.dumps(service["spec"]) == json.dumps(
        {"selector": {"app": "gpulab-3f2a9c1e"}, "ports": [{"port": 11434, "targetPort": 11434}]}
    )


@pytest.mark.parametrize(
    "value",
    [
        "x\n---\napiVersion: v1\nkind: Namespace",
        "a: b",
        "{evil: 1}",
        "&anchor x",
        "*alias",
        "!!python/object:os.system",
        "- item",
        "'quoted'",
        "# comment",
    ],
)
def test_yaml_breaking_values_are_data(value):
    objects = render(model=value)
    assert len(objects) == 2
    assert objects[0]["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == value


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: x}\nrules: []", "not allowed"),
        ("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: x}", "not allowed"),
        ("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}", "not allowed"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}", "not allowed"),
        (DEPLOYMENT.replace("      containers:", "      hostNetwork: true\n      containers:"), "hostNetwork"),
        (DEPLOYMENT.replace("      containers:", "      hostPID: true\n      containers:"), "hostPID"),
        (
            DEPLOYMENT.replace("      containers:", "      serviceAccountName: admin\n      containers:"),
            "service account",
        ),
        (
            DEPLOYMENT.replace(
                "      containers:", "      volumes: [{name: h, hostPath: {path: /}}]\n      containers:"
            ),
            "hostPath",
        ),
        (
            DEPLOYMENT.replace("          image:", "          securityContext: {privileged: true}\n          image:"),
            "privileged",
        ),
        (
            DEPLOYMENT.replace(
                "          image:", "          securityContext: {capabilities: {add: [SYS_ADMIN]}}\n          image:"
            ),
            "SYS_ADMIN",
        ),
        (DEPLOYMENT.replace("replicas: {{ replicas }}", "replicas: many"), "spec.replicas"),
        ("apiVersion: v1\nkind: Service\nmetadata: {name: {{ model }}}\nspec: {ports: [{port: x}]}", "ports.0.port"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  {{ model }}: x", "not keys"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: {{ nope }}}", "not a parameter"),
        ("apiVersion: v1\n kind: : ConfigMap", "not valid YAML"),
        (
            DEPLOYMENT.replace('args: ["--model-name", "{{ model }}"]', 'command: [sh, -c, "serve {{ model }}"]'),
            "inside a shell script",
        ),
    ],
)
def test_refused_with_the_reason(body, reason):
    with pytest.raises(ManifestError, match=reason):
        render(body)


def test_quoted_placeholder_is_text_and_bare_keeps_its_type():
    config = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: "{{ replicas }}", b: "{{ debug }}"}'
    assert render(config + "\n---\n" + DEPLOYMENT)[0]["data"] == {"a": "2", "b": "false"}
    deployment = render()[0]
    assert deployment["spec"]["replicas"] == 2


def test_requested_resources_count_replicas():
    totals = requested_resources(render(replicas=3, gpus=2))
    assert (totals.gpus, totals.cpu_millis, totals.memory_bytes) == (6, 6000, 3 * 4 * 2**30)


@pytest.mark.django_db
def test_instructor_authors_a_kubernetes_template_and_unsafe_ones_are_not_published(login, instructor, course):
    client = login(instructor)
    params = [p.as_dict() for p in SCHEMA]
    form = editor_data(
        course,
        params=params,
        name="Tiny server",
        slug="tiny-server",
        backend="kubernetes",
        body=DEPLOYMENT,
        max_gpus=2,
        max_minutes=60,
    )
    assert client.post(reverse("jobs:template_new", args=[course.slug]), form).status_code == 302
    preview = client.post(reverse("jobs:template_preview", args=[course.slug]), form).content.decode()
    assert "namespace: gpulab-preview" in preview and "kind: Service" in preview
    client.post(reverse("jobs:template_edit", args=[course.slug, "tiny-server"]), {**form, "action": "publish"})
    assert JobTemplate.objects.get(slug="tiny-server").status == "published"

    unsafe = {
        **form,
        "slug": "unsafe",
        "body": DEPLOYMENT.replace("      containers:", "      hostNetwork: true\n      containers:"),
    }
    client.post(reverse("jobs:template_new", args=[course.slug]), unsafe)
    response = client.post(reverse("jobs:template_edit", args=[course.slug, "unsafe"]), {**unsafe, "action": "publish"})
    assert "hostNetwork is not allowed" in " ".join(response.context["form"].errors["body"])
    assert JobTemplate.objects.get(slug="unsafe").status == "draft"


def test_a_template_runs_exactly_one_workload():
    config = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}"
    with pytest.raises(
        ManifestError, match="exactly one Deployment, Job, MPIJob, PyTorchJob or RayJob; this one has 0"
    ):
        render(config)
    with pytest.raises(ManifestError, match="this one has 2"):
        render(DEPLOYMENT + "\n---\n" + DEPLOYMENT.replace('"{{ job_name }}"', "other", 1))


def test_pods_carry_the_workload_kind_and_templates_cannot_set_portal_labels():
    body = DEPLOYMENT.replace(
        'metadata: {labels: {app: "{{ job_name }}"}}',
        'metadata: {labels: {app: "{{ job_name }}", gpulab.io/role: loadtest, gpulab.io/job: someone-else}}',
    )
    pod_labels = render(body)[0]["spec"]["template"]["metadata"]["labels"]
    assert pod_labels["gpulab.io/workload"] == "Deployment"
    assert pod_labels["gpulab.io/job"] == CTX.job_id
    assert "gpulab.io/role" not in pod_labels


def test_an_autoscaled_deployment_counts_at_its_maximum():
    hpa = (
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\n"
        "spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: '{{ job_name }}'}, "
        "minReplicas: 1, maxReplicas: 4}"
    )
    totals = requested_resources(render(DEPLOYMENT + "\n---\n" + hpa, replicas=1, gpus=1))
    assert (totals.gpus, totals.pods) == (4, 4)
