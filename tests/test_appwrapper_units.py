"""AppWrappers without an API server: the MLBatch batch-inference template as the objects each cluster is sent (an
AppWrapper that Kueue admits where the CRD is, a plain Job elsewhere), every one checked against its published schema;
what an AppWrapper may wrap; and an AppWrapper's phases and conditions in words for the job page and its timeline."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

import kubernetes_validate
import pytest

from clusters.backends.kind import RenderRefused
from clusters.backends.kinds.kubernetes import appwrapper_status, crds, launch
from clusters.backends.kinds.kubernetes.manifests import (
    KUBERNETES_VERSION,
    ManifestError,
    preview_context,
    render_manifests,
    requested_resources,
)
from clusters.models import Cluster
from core.choices import JobState
from core.templating.params import parse_schema
from jobs.builtin import load_builtin_templates
from jobs.models import JobTemplate
from tests.kind_settings import set_course

QUEUE = "kueue.x-k8s.io/queue-name"
JOB_ID = uuid.UUID("12345678-9abc-4def-8123-456789abcdef")


@pytest.fixture
def vllm(db) -> JobTemplate:
    load_builtin_templates()
    return JobTemplate.objects.get(slug="k8s-vllm-benchmark")


def cluster(**addons) -> Cluster:
    return Cluster(name="k", kind="kubernetes", kind_settings={"kube_addons": addons})


def rendered(template, course, user, on: Cluster, **values) -> list[dict]:
    defaults = {p.name: p.default for p in template.schema()} | values
    script = launch.render(template, course, user, defaults, JOB_ID, cluster=on).script
    from clusters.backends.kinds.kubernetes.manifests import load

    return load(script)


def pods_of(job: dict) -> dict:
    return job["spec"]["template"]


def test_with_the_crd_and_kueue_the_appwrapper_is_what_kueue_admits_and_its_job_is_left_alone(vllm, course, alice):
    (wrapper,) = rendered(vllm, course, alice, cluster(kueue=True, appwrapper=True))
    crds.validate(wrapper)  # the published AppWrapper schema (AppWrapper v1.1 to v1.2.1)
    assert wrapper["apiVersion"] == "workload.codeflare.dev/v1beta2"
    assert wrapper["metadata"]["name"] == "gpulab-12345678"
    assert wrapper["metadata"]["labels"][QUEUE] == "gpulab-hpc" and wrapper["spec"]["suspend"] is True
    (component,) = wrapper["spec"]["components"]
    job = component["template"]
    kubernetes_validate.validate(job, KUBERNETES_VERSION, strict=True)
    assert QUEUE not in job["metadata"]["labels"] and "suspend" not in job["spec"]  # the AppWrapper's, not the Job's
    assert job["metadata"]["namespace"] == wrapper["metadata"]["namespace"] == "gpulab-hpc"
    assert job["spec"]["activeDeadlineSeconds"] == 120 * 60  # the template's time limit reaches the wrapped Job
    labels = pods_of(job)["metadata"]["labels"]
    assert labels["gpulab.io/job"] == str(JOB_ID) and labels["gpulab.io/workload"] == "Job"
    assert [c["name"] for c in pods_of(job)["spec"]["containers"]] == ["vllm", "load-generator"]


def test_without_the_crd_the_same_template_is_a_plain_job_in_the_queue(vllm, course, alice):
    (job,) = rendered(vllm, course, alice, cluster(kueue=True), max_concurrency=32)
    kubernetes_validate.validate(job, KUBERNETES_VERSION, strict=True)
    assert job["kind"] == "Job" and job["metadata"]["labels"][QUEUE] == "gpulab-hpc" and job["spec"]["suspend"] is True
    env = {e["name"]: e["value"] for e in pods_of(job)["spec"]["containers"][1]["env"]}
    assert env["MAX_CONCURRENCY"] == "32"
    (plain,) = rendered(vllm, course, alice, cluster())  # no Kueue either: nothing to wait for
    assert plain["kind"] == "Job" and QUEUE not in plain["metadata"]["labels"] and "suspend" not in plain["spec"]


def test_the_wrapped_pods_count_against_the_course_s_limits(vllm, course, alice):
    set_course(course, max_memory_gb=32)
    with pytest.raises(RenderRefused, match=re.escape("asks for 68 GiB of memory")):
        rendered(vllm, course, alice, cluster(appwrapper=True))
    schema = parse_schema(vllm.parameters)
    objects = render_manifests(vllm.body, schema, {p.name: p.default for p in schema}, preview_context())
    assert requested_resources(objects).gpus == 1 and requested_resources(objects).pods == 1


WRAPPER = """
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata: {{name: "{{{{ job_name }}}}"}}
spec:
  components:
    - template:
{inner}
"""
JOB = """        apiVersion: batch/v1
        kind: Job
        metadata: {name: "{{ job_name }}", namespace: kube-system}
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: c, image: busybox, command: ["true"]}]
"""


def render(body: str) -> list[dict]:
    return render_manifests(body, [], {}, preview_context())


def test_a_wrapped_job_is_checked_and_placed_as_if_it_stood_alone():
    (wrapper,) = render(WRAPPER.format(inner=JOB))
    job = wrapper["spec"]["components"][0]["template"]
    assert job["metadata"]["namespace"] == "gpulab-preview"  # never another namespace
    assert pods_of(job)["metadata"]["labels"]["gpulab.io/owner"] == "preview"


@pytest.mark.parametrize(
    ("inner", "reason"),
    [
        (JOB.replace("restartPolicy: Never", "restartPolicy: Never\n              hostNetwork: true"), "hostNetwork"),
        (
            JOB.replace('command: ["true"]}', 'command: ["true"], securityContext: {privileged: true}}'),
            "privileged containers are not allowed",
        ),
        (
            JOB.replace("restartPolicy: Never", "restartPolicy: Never\n              volumes: [{hostPath: {path: /}}]"),
            "hostPath volumes are not allowed",
        ),
        (JOB.replace("kind: Job", "kind: CronJob"), "wraps one batch/v1 Job, not batch/v1/CronJob"),
        (
            "        apiVersion: rbac.authorization.k8s.io/v1\n        kind: ClusterRoleBinding\n",
            "not rbac.authorization.k8s.io/v1/ClusterRoleBinding",
        ),
        (
            "        apiVersion: workload.codeflare.dev/v1beta2\n        kind: AppWrapper\n"
            "        metadata: {name: x}\n        spec: {components: []}\n",
            "not workload.codeflare.dev/v1beta2/AppWrapper",
        ),
        (JOB.replace("          template:", "          backoffLimit: x\n          template:"), "not valid Kubernetes"),
        (JOB.replace('command: ["true"]', 'command: ["sh", "-c", "echo {{ job_id }}"]'), "inside a shell script"),
    ],
)
def test_what_an_appwrapper_may_not_wrap_is_refused_with_the_reason(inner, reason):
    with pytest.raises(ManifestError, match=re.escape(reason)):
        render(WRAPPER.format(inner=inner))


def test_an_appwrapper_that_is_not_valid_against_its_schema_or_wraps_two_is_refused():
    two = WRAPPER.format(inner=JOB) + "    - template:\n" + JOB
    with pytest.raises(ManifestError, match="must wrap exactly one Job"):
        render(two)
    bad = WRAPPER.format(inner=JOB).replace("spec:\n  components:", "spec:\n  suspend: maybe\n  components:", 1)
    with pytest.raises(ManifestError, match=re.escape("is not a valid workload.codeflare.dev/v1beta2 AppWrapper")):
        render(bad)


# -- an AppWrapper's status in words ----------------------------------------------------------------------------
def at(second: int) -> str:
    return datetime(2026, 3, 1, 9, 0, second, tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cond(kind: str, state: str, reason: str, message: str, second: int) -> dict:
    return {"type": kind, "status": state, "reason": reason, "message": message, "lastTransitionTime": at(second)}


def wrapper(phase: str, *conditions: dict, suspend: bool = False, retries: int = 0) -> dict:
    status = {"phase": phase, "conditions": list(conditions), **({"resettingCount": retries} if retries else {})}
    return {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": "gpulab-12345678"},
        "spec": {"components": [{"template": {}}], "suspend": suspend},
        "status": status,
    }


def pod(phase: str, code: int | None = None) -> dict:
    state = {"terminated": {"exitCode": code}} if code is not None else {"running": {}}
    return {
        "metadata": {"name": "p"},
        "status": {"phase": phase, "startTime": at(5), "containerStatuses": [{"name": "vllm", "state": state}]},
    }


DEPLOYED = (
    cond("QuotaReserved", "True", "Resuming", "Suspend is false", 1),
    cond("ResourcesDeployed", "True", "Resuming", "Suspend is false", 1),
)


@pytest.mark.parametrize(
    ("aw", "pods", "state", "words"),
    [
        (wrapper("", suspend=True), [], JobState.PENDING, "The AppWrapper controller"),
        (wrapper("Suspended", suspend=True), [], JobState.PENDING, "waits to be let go"),
        (wrapper("Resuming", *DEPLOYED), [], JobState.PENDING, "Admitted: the AppWrapper is creating its Job"),
        (wrapper("Running", *DEPLOYED), [pod("Running")], JobState.RUNNING, ""),
        (
            wrapper("Running", *DEPLOYED, cond("Unhealthy", "True", "FoundFailedPods", "", 7)),
            [pod("Running"), pod("Failed", 1)],
            JobState.RUNNING,
            "a pod of its Job failed: the AppWrapper retries it unless it recovers",
        ),
        (
            wrapper("Resetting", cond("Unhealthy", "True", "InsufficientPodsReady", "1 pods pending", 9), retries=1),
            [],
            JobState.RUNNING,
            "retrying (retry 1): its pods were not all running in time (1 pods pending)",
        ),
        (wrapper("Suspending", suspend=True), [pod("Running")], JobState.PENDING, "Kueue took the AppWrapper's quota"),
        (wrapper("Terminating"), [pod("Running")], JobState.RUNNING, "being deleted"),
        (
            wrapper("Failed", cond("Unhealthy", "True", "FailedComponent", "Found 1 failed components", 9), retries=3),
            [pod("Failed", 2)],
            JobState.FAILED,
            "gave up after 3 retries: its Job failed (Found 1 failed components)",
        ),
    ],
)
def test_each_phase_of_an_appwrapper_is_a_state_with_its_reason_in_words(aw, pods, state, words):
    status = appwrapper_status.status("gpulab-hpc/x", aw, pods, None)
    assert status.state == state and words in status.reason and status.raw_state == (aw["status"]["phase"] or "Empty")


def test_a_succeeded_appwrapper_completes_the_job_when_it_released_its_quota():
    done = cond("QuotaReserved", "False", "Succeeded", "1 pods succeeded and no running, pending, or failed pods", 30)
    status = appwrapper_status.status("ns/x", wrapper("Succeeded", done, DEPLOYED[1]), [pod("Succeeded", 0)], None)
    assert status.state == JobState.COMPLETED and status.exit_code == 0
    assert status.finished_at == datetime(2026, 3, 1, 9, 0, 30, tzinfo=UTC)
    assert status.started_at == datetime(2026, 3, 1, 9, 0, 5, tzinfo=UTC)


def test_an_appwrapper_kueue_has_not_let_go_says_what_kueue_says():
    message = "couldn't assign flavors to pod set gpulab-12345678-0: insufficient unused quota for nvidia.com/gpu "
    message += "in flavor default-flavor, 1 more needed"
    workload = {"status": {"conditions": [cond("QuotaReserved", "False", "Pending", message, 2)]}}
    status = appwrapper_status.status("ns/x", wrapper("Suspended", suspend=True), [], workload)
    assert status.state == JobState.PENDING and "it needs 1 more nvidia.com/gpu" in status.reason


def test_the_timeline_keeps_each_step_once_in_words_oldest_first():
    aw = wrapper(
        "Running",
        cond("QuotaReserved", "True", "Resuming", "Suspend is false", 1),
        cond("ResourcesDeployed", "True", "Resuming", "Reset complete; resuming", 12),
        cond("PodsReady", "True", "SufficientPodsReady", "1 pods running; 0 pods succeeded", 14),
        cond("Unhealthy", "False", "FoundNoFailedPods", "", 14),
    )
    steps = appwrapper_status.milestones(aw)
    names = ["AppWrapperQuotaReserved", "AppWrapperResourcesDeployed", "AppWrapperPodsReady"]
    assert [s.condition for s in steps] == names
    assert steps[2].words == "The AppWrapper sees its pods ready (1 pods running; 0 pods succeeded)"
    reset = wrapper("Resetting", cond("ResourcesDeployed", "False", "Resetting", "Resources deleted", 10))
    (step,) = appwrapper_status.milestones(reset)
    assert step.condition == "AppWrapperResetting" and "deleted its Job to try again" in step.words
    hostile = wrapper("Running", cond("Unhealthy", "True", "X" * 2000, "<b>", 3), cond("PodsReady", "True", "", "", 0))
    hostile["status"]["conditions"][1]["lastTransitionTime"] = "not a time"
    (kept,) = appwrapper_status.milestones(hostile)
    assert len(kept.condition) <= 32 and len(kept.words) <= 500  # what the timeline's columns hold
