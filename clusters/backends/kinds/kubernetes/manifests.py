"""Kubernetes templates: YAML objects with typed placeholders, rendered as data and checked before anything is sent.

A placeholder is first replaced by an opaque token, the YAML is parsed, and only then do the tokens in the
parsed objects become the values: a bare {{ n }} keeps its type (an int stays an int), a quoted "{{ n }}" is
text, and a string that holds a newline, ": ", "{", "---" or "&anchor" is one string scalar. Values never
meet YAML syntax. Then every object is checked:
    - the kind is one the portal manages (no Namespace, ClusterRole, RoleBinding, …);
    - pod specs use no host namespaces, hostPath volumes, privileged containers or other service accounts;
    - a RayJob brings its own Ray cluster, reachable only through the portal, and takes values only as data (its
      entrypoint is a shell command line on the Ray head: a value stands there only where a SLURM script may hold
      one, and not at all in the fields KubeRay pastes into shell command lines);
    - the namespace and the portal's labels are forced;
    - the object validates against the pinned Kubernetes version's schema (kubernetes-validate).
"""

from __future__ import annotations

import copy
import functools
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import kubernetes_validate
import yaml

from core.templating.params import Param
from core.templating.placeholders import PLACEHOLDER, not_a_parameter, stray_braces
from core.templating.shell_safety import placeholder_problems

from . import crds

KUBERNETES_VERSION = "1.34.0"

# kubernetes_validate reads and parses its JSON schema files on every call: two files of up to a few MB per object,
# 50 ms of a render's 190. They never change while the portal runs, so each is parsed once; the library only reads
# what it is given (its validator is built on them, never writing to them).
kubernetes_validate.utils.schema_contents = functools.cache(kubernetes_validate.utils.schema_contents)
MANAGED_BY = "gpulab-portal"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
LABEL_JOB = "gpulab.io/job"
LABEL_WORKLOAD = "gpulab.io/workload"  # on pods: the kind of object that made them (Deployment, Job, MPIJob)
LABEL_ROLE = "gpulab.io/role"  # on helper objects of a job, e.g. a load test; absent on the job's own
LABEL_OWNER = "gpulab.io/owner"
LABEL_COURSE = "gpulab.io/course"
TOKEN = re.compile(r"__gpulab_(\d+)__")

ALLOWED_KINDS = {
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("v1", "Service"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "ConfigMap"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("networking.k8s.io/v1", "Ingress"),
    ("kubeflow.org/v2beta1", "MPIJob"),  # offered only where the MPI Operator's CRD exists
    ("kubeflow.org/v1", "PyTorchJob"),  # launched only where the Training Operator's CRD exists
    ("workload.codeflare.dev/v1beta2", "AppWrapper"),  # a plain Job where the cluster has no AppWrapper (launch.py)
    ("ray.io/v1", "RayJob"),  # launched only where KubeRay's CRD exists
}
WORKLOAD_KINDS = {"Deployment", "Job", "MPIJob", "PyTorchJob", "AppWrapper", "RayJob"}
# What an AppWrapper of the portal may wrap: its one Job (the portal follows the Job's pods by their labels).
WRAPPABLE_KINDS = {("batch/v1", "Job")}
# Operator kinds whose pod templates sit in a map of replica types: kind → that map's field in the spec.
REPLICA_SPECS = {"MPIJob": "mpiReplicaSpecs", "PyTorchJob": "pytorchReplicaSpecs"}
# KubeRay (v1.4.2) pastes these RayJob fields into bash command lines (the head's and workers' `ray start`, the
# submitter's `ray job submit`), or hands them to Ray as YAML or JSON to parse: no value may stand in them.
RAYJOB_COMMAND_FIELDS = ("runtimeEnvYAML", "metadata", "jobId", "entrypointResources", "clusterSelector")
RAY_ENTRYPOINT_WORD = re.compile(r"[A-Za-z0-9@%+=:,./_-]+")  # a word no shell on its way changes (shlex's safe set)
# The submitter pod KubeRay makes when a RayJob names none (common.GetDefaultSubmitterTemplate): what it holds.
RAY_DEFAULT_SUBMITTER = {
    "containers": [{"name": "ray-job-submitter", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]
}
FORBIDDEN_CAPABILITIES = {"ALL", "SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE", "SYS_MODULE", "DAC_READ_SEARCH"}


class ManifestError(ValueError):
    """The template cannot become objects the portal will send; the message names the object and the reason."""


@dataclass(frozen=True)
class ManifestContext:
    job_id: str
    namespace: str
    owner: str
    course: str
    service_account: str = "default"

    @property
    def job_name(self) -> str:
        return f"gpulab-{self.job_id[:8]}"

    def labels(self) -> dict[str, str]:
        return {
            MANAGED_BY_LABEL: MANAGED_BY,
            LABEL_JOB: self.job_id,
            LABEL_OWNER: label_value(self.owner),
            LABEL_COURSE: label_value(self.course),
        }


def label_value(text: str) -> str:
    """A valid label value: at most 63 of [A-Za-z0-9._-], starting and ending alphanumeric."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", text)[:63].strip("._-")
    return cleaned or "x"


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> list:
    """A template's objects with its placeholders as tokens: the same text for every launch of a template, so it is
    parsed once (libyaml, where PyYAML has it: the same safe loader, several times faster)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [doc for doc in yaml.load_all(text, Loader=loader) if doc is not None]


def render_manifests(body: str, schema: list[Param], values: Mapping[str, Any], ctx: ManifestContext) -> list[dict]:
    params = {p.name: p for p in schema}
    builtins = {"job_id": ctx.job_id, "job_name": ctx.job_name, "namespace": ctx.namespace}
    slots: list[Any] = []
    names: list[str | None] = []  # each slot's parameter, None for the portal's own values (job_name, …)

    def to_token(match: re.Match) -> str:
        name, flag = match.group(1), match.group(2)
        if flag:
            raise ManifestError("{{ name|flag:… }} is for scripts; in YAML use the bool parameter itself.")
        if name in builtins:
            value = builtins[name]
        elif name in params:
            value = values[name]
        else:
            raise ManifestError(not_a_parameter(name))
        # As in YAML itself: "{{ n }}" (quoted) is text, {{ n }} (bare) keeps the value's type.
        before, after = match.string[match.start() - 1 : match.start()], match.string[match.end() : match.end() + 1]
        slots.append(_as_text(value) if before in {'"', "'"} and before == after else value)
        names.append(None if name in builtins else name)
        return f"__gpulab_{len(slots) - 1}__"

    text = PLACEHOLDER.sub(to_token, body)
    stray = stray_braces(text)
    if stray:
        raise ManifestError(stray)
    try:
        documents = copy.deepcopy(_parsed(text))  # the values go into this copy's slots, never into the cached one
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise ManifestError(f"The template is not valid YAML{where}: {getattr(exc, 'problem', exc)}.") from None
    if not documents:
        raise ManifestError("The template holds no Kubernetes objects.")
    objects = []
    for document in documents:
        if not isinstance(document, dict):
            raise ManifestError("Every YAML document must be one Kubernetes object (a mapping).")
        _check_shell_scripts(document)
        entrypoint = _ray_entrypoint(document, slots, names, schema)
        filled = _fill(document, slots)
        if entrypoint is not None:
            filled["spec"]["entrypoint"] = entrypoint
        objects.append(check_object(filled, ctx))
    workloads = [obj for obj in objects if obj["kind"] in WORKLOAD_KINDS]
    if len(workloads) != 1:
        raise ManifestError(
            "A Kubernetes template runs exactly one Deployment, Job, MPIJob, PyTorchJob or RayJob; this one has "
            f"{len(workloads)}."
        )
    return objects


def check_object(obj: dict, ctx: ManifestContext) -> dict:
    """Refuse what the portal does not allow, force namespace and labels, validate against the schema. An
    AppWrapper's wrapped objects are checked the same way first, each as if it stood alone."""
    if obj.get("kind") == "AppWrapper":
        _check_wrapped(obj, ctx)
    _check(obj, ctx)
    _force(obj, ctx)
    _validate(obj)
    return obj


def _check_wrapped(obj: dict, ctx: ManifestContext) -> None:
    components = (obj.get("spec") or {}).get("components")
    wrapped = wrapped_objects(obj)
    if not isinstance(components, list) or len(wrapped) != len(components) or len(wrapped) != 1:
        raise ManifestError(f"{_describe(obj)} must wrap exactly one Job (one component with a template).")
    for inner in wrapped:
        if (inner.get("apiVersion"), inner.get("kind")) not in WRAPPABLE_KINDS:
            raise ManifestError(
                f"{_describe(obj)}: an AppWrapper of the portal wraps one batch/v1 Job, not "
                f"{inner.get('apiVersion')}/{inner.get('kind')}."
            )
        check_object(inner, ctx)


def _exec_commands(pod: dict) -> Iterator[tuple[str, list]]:
    for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        container = container or {}
        name = container.get("name", "?")
        yield name, [*(container.get("command") or []), *(container.get("args") or [])]
        for hook in (container.get("lifecycle") or {}).values():
            yield name, ((hook or {}).get("exec") or {}).get("command") or []


def _check_shell_scripts(document: dict) -> None:
    """A value inside an `sh -c` script would be read by the shell: values must come in as environment variables.
    In a RayJob, KubeRay pastes container commands and arguments, rayStartParams and several spec fields into bash
    command lines (or Ray parses them as YAML or JSON): no value may stand in them at all."""
    if document.get("kind") == "RayJob" and isinstance(document.get("spec"), dict):
        _check_rayjob_values(document["spec"])
    for pod in pod_specs(document):
        for container, argv in _exec_commands(pod):
            for flag, script in pairwise(argv):
                if flag in {"-c", "-lc", "-ec"} and isinstance(script, str) and TOKEN.search(script):
                    raise ManifestError(
                        f"Container {container}: a placeholder inside a shell script would be run by the shell. "
                        "Pass the value as an environment variable (env: - name: MODEL value: {{ model }}) and "
                        'use "$MODEL" in the script.'
                    )


def _mapping(node: Any) -> dict:
    return node if isinstance(node, dict) else {}


def _has_token(node: Any) -> bool:
    if isinstance(node, dict):
        return any(_has_token(k) or _has_token(v) for k, v in node.items())
    if isinstance(node, list):
        return any(_has_token(item) for item in node)
    return isinstance(node, str) and bool(TOKEN.search(node))


def _check_rayjob_values(spec: dict) -> None:
    for field in RAYJOB_COMMAND_FIELDS:
        if _has_token(spec.get(field)):
            raise ManifestError(
                f"RayJob: spec.{field} cannot hold a placeholder (KubeRay pastes it into a command line, or Ray "
                "parses it). Give the value to the containers as an environment variable instead."
            )
    cluster = _mapping(spec.get("rayClusterSpec"))
    groups = [("head", cluster.get("headGroupSpec"))]
    groups += [(str((g or {}).get("groupName", "?")), g) for g in cluster.get("workerGroupSpecs") or []]
    for name, group in groups:
        if isinstance(group, dict) and _has_token(group.get("rayStartParams")):
            raise ManifestError(
                f"RayJob: the rayStartParams of group {name} cannot hold a placeholder (KubeRay pastes them into the "
                "`ray start` command line). Give the value as an environment variable instead."
            )
    templates = [(group or {}).get("template") for _, group in groups if isinstance(group, dict)]
    for template in [*templates, spec.get("submitterPodTemplate")]:
        for container in ((template or {}).get("spec") or {}).get("containers") or []:
            argv = [*((container or {}).get("command") or []), *((container or {}).get("args") or [])]
            if _has_token(argv):
                raise ManifestError(
                    f"Container {(container or {}).get('name', '?')}: a RayJob's container commands and arguments "
                    "cannot hold a placeholder (KubeRay joins them into a bash command line). Use the entrypoint, or "
                    "an environment variable (env: - name: STEPS value: {{ steps }})."
                )


def _ray_entrypoint(document: dict, slots: list[Any], names: list[str | None], schema: list[Param]) -> str | None:
    """A RayJob's entrypoint with its values in, or None when the document is no RayJob or has none to fill.

    The entrypoint is a command line: KubeRay's submitter pastes it into `bash -c` (`ray job submit … -- <entrypoint>`)
    and Ray runs what it submitted with a shell on the head. So it is checked as a SLURM script is (each value an
    inert argument word: core/templating/shell_safety.py), and a value may only be one plain word that neither
    shell nor `ray job submit` changes (letters, digits and @ % + = : , . / _ -), which every int, float, bool and
    string value is; a choice must be one too."""
    spec = document.get("spec")
    if document.get("kind") != "RayJob" or not isinstance(spec, dict) or not isinstance(spec.get("entrypoint"), str):
        return None
    entrypoint = spec["entrypoint"]
    if not TOKEN.search(entrypoint):
        return None
    params = {p.name: p for p in schema}
    as_written = TOKEN.sub(
        lambda m: _as_text(slots[int(m[1])]) if names[int(m[1])] is None else f"{{{{ {names[int(m[1])]} }}}}",
        entrypoint,
    )
    problems = placeholder_problems(as_written, schema)  # no GPULAB_P_ variables, no directive comments
    if problems:
        raise ManifestError("RayJob entrypoint: " + " ".join(problems))

    def word(match: re.Match) -> str:
        index = int(match[1])
        text = _as_text(slots[index])
        if not RAY_ENTRYPOINT_WORD.fullmatch(text):
            name = names[index] or ""
            label = params[name].label if name in params else name
            raise ManifestError(
                f"RayJob entrypoint: the value {text!r} of {label} is not one plain word (letters, digits and "
                "@ % + = : , . / _ -); the entrypoint passes through two shells, so only such words may stand in it."
            )
        return shlex.quote(text)

    return TOKEN.sub(word, entrypoint)


def _fill(node: Any, slots: list[Any]) -> Any:
    """Replace tokens in the parsed objects by the values: whole scalars keep their type, parts become text."""
    if isinstance(node, dict):
        filled = {}
        for key, value in node.items():
            if isinstance(key, str) and TOKEN.search(key):
                raise ManifestError("Placeholders may give values, not keys.")
            filled[key] = _fill(value, slots)
        return filled
    if isinstance(node, list):
        return [_fill(item, slots) for item in node]
    if isinstance(node, str):
        whole = TOKEN.fullmatch(node)
        if whole:
            return slots[int(whole.group(1))]
        return TOKEN.sub(lambda m: _as_text(slots[int(m.group(1))]), node)
    return node


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _describe(obj: dict) -> str:
    return f"{obj.get('kind', '?')} “{(obj.get('metadata') or {}).get('name', '?')}”"


def ray_groups(spec: dict) -> list[dict]:
    """A RayJob's Ray cluster groups: the head's, then each worker group's (the mappings that hold their templates)."""
    cluster = _mapping(spec.get("rayClusterSpec"))
    groups = [cluster.get("headGroupSpec"), *(cluster.get("workerGroupSpecs") or [])]
    return [group for group in groups if isinstance(group, dict)]


def pod_specs(obj: dict) -> Iterator[dict]:
    """Every pod spec in an object: Deployments and Jobs have one, an MPIJob or PyTorchJob one per replica type, an
    AppWrapper those of the objects it wraps, a RayJob one for its Ray head, one per worker group and its submitter's
    where it names one."""
    spec = obj.get("spec") or {}
    if obj.get("kind") in {"Deployment", "Job"}:
        yield ((spec.get("template") or {}).get("spec")) or {}
    elif obj.get("kind") in REPLICA_SPECS:
        for replica in (spec.get(REPLICA_SPECS[obj["kind"]]) or {}).values():
            yield (((replica or {}).get("template") or {}).get("spec")) or {}
    elif obj.get("kind") == "AppWrapper":
        for wrapped in wrapped_objects(obj):
            yield from pod_specs(wrapped)
    elif obj.get("kind") == "RayJob":
        for group in ray_groups(spec):
            yield ((group.get("template") or {}).get("spec")) or {}
        if isinstance(spec.get("submitterPodTemplate"), dict):
            yield spec["submitterPodTemplate"].get("spec") or {}


def wrapped_objects(obj: dict) -> list[dict]:
    """The objects an AppWrapper wraps (its components' templates), as they are; [] for any other object."""
    if obj.get("kind") != "AppWrapper":
        return []
    components = (obj.get("spec") or {}).get("components") or []
    return [c["template"] for c in components if isinstance(c, dict) and isinstance(c.get("template"), dict)]


def pod_templates(obj: dict) -> Iterator[dict]:
    spec = obj.get("spec") or {}
    if obj.get("kind") in {"Deployment", "Job"}:
        yield spec.setdefault("template", {})
    elif obj.get("kind") in REPLICA_SPECS:
        for replica in (spec.get(REPLICA_SPECS[obj["kind"]]) or {}).values():
            yield replica.setdefault("template", {})
    elif obj.get("kind") == "RayJob":
        for group in ray_groups(spec):
            yield group.setdefault("template", {})
        if isinstance(spec.get("submitterPodTemplate"), dict):
            yield spec["submitterPodTemplate"]


def _check(obj: dict, ctx: ManifestContext) -> None:
    kind_key = (obj.get("apiVersion"), obj.get("kind"))
    if kind_key not in ALLOWED_KINDS:
        allowed = ", ".join(sorted(kind for _, kind in ALLOWED_KINDS))
        raise ManifestError(f"{obj.get('apiVersion')}/{obj.get('kind')} objects are not allowed; use {allowed}.")
    if not isinstance(obj.get("metadata"), dict) or not obj["metadata"].get("name"):
        raise ManifestError(f"Every {obj.get('kind')} needs metadata.name (use {{{{ job_name }}}} to keep it unique).")
    what = _describe(obj)
    if obj.get("kind") == "RayJob":
        _check_rayjob(obj.get("spec") or {}, what)
    for pod in pod_specs(obj):
        for field in ("hostNetwork", "hostPID", "hostIPC"):
            if pod.get(field):
                raise ManifestError(f"{what}: {field} is not allowed.")
        account = pod.get("serviceAccountName") or pod.get("serviceAccount")
        if account and account != ctx.service_account:
            raise ManifestError(
                f"{what}: the service account must be the course's ({ctx.service_account}), not {account}."
            )
        for volume in pod.get("volumes") or []:
            if "hostPath" in (volume or {}):
                raise ManifestError(f"{what}: hostPath volumes are not allowed (volume {volume.get('name')}).")
        for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
            security = (container or {}).get("securityContext") or {}
            if security.get("privileged"):
                raise ManifestError(f"{what}: privileged containers are not allowed ({container.get('name')}).")
            if security.get("allowPrivilegeEscalation"):
                raise ManifestError(f"{what}: allowPrivilegeEscalation is not allowed ({container.get('name')}).")
            added = set((security.get("capabilities") or {}).get("add") or [])
            if added & FORBIDDEN_CAPABILITIES:
                raise ManifestError(f"{what}: capability {sorted(added & FORBIDDEN_CAPABILITIES)[0]} is not allowed.")


def _check_rayjob(spec: dict, what: str) -> None:
    """A RayJob brings its own Ray cluster, whose dashboard only the portal reaches (KubeRay's head service, inside
    the cluster), and submits its entrypoint itself."""
    if spec.get("clusterSelector") or not isinstance(spec.get("rayClusterSpec"), dict):
        raise ManifestError(
            f"{what}: a RayJob must bring its own Ray cluster (spec.rayClusterSpec); clusterSelector would run it on "
            "a cluster that is not the job's."
        )
    head = spec["rayClusterSpec"].get("headGroupSpec") or {}
    if head.get("enableIngress"):
        raise ManifestError(f"{what}: enableIngress would publish the Ray dashboard outside the portal.")
    if head.get("serviceType", "ClusterIP") != "ClusterIP":
        raise ManifestError(
            f"{what}: the Ray head's service must be ClusterIP (a {head['serviceType']} would publish the Ray "
            "dashboard outside the portal); students open it from the job page."
        )
    if head.get("headService") is not None:
        raise ManifestError(
            f"{what}: headGroupSpec.headService is not allowed; the portal reaches the Ray dashboard at the head "
            "service KubeRay names itself (<cluster>-head-svc)."
        )
    mode = spec.get("submissionMode", "K8sJobMode")
    if mode not in {"K8sJobMode", "HTTPMode"}:
        raise ManifestError(
            f"{what}: submissionMode {mode} is not allowed; use K8sJobMode (the default) or HTTPMode, so KubeRay "
            "submits the entrypoint itself."
        )


def _own_labels(labels: dict | None) -> dict:
    """A template's labels without any in the portal's own prefix: those only the portal sets."""
    return {k: v for k, v in (labels or {}).items() if not str(k).startswith("gpulab.io/") and k != MANAGED_BY_LABEL}


def _force(obj: dict, ctx: ManifestContext) -> None:
    labels = ctx.labels()
    metadata = obj["metadata"]
    metadata["namespace"] = ctx.namespace
    metadata["labels"] = {**_own_labels(metadata.get("labels")), **labels}
    for template in pod_templates(obj):
        template_meta = template.setdefault("metadata", {})
        template_meta["labels"] = {**_own_labels(template_meta.get("labels")), **labels, LABEL_WORKLOAD: obj["kind"]}


def _validate(obj: dict) -> None:
    if (obj.get("apiVersion"), obj.get("kind")) in crds.definitions():  # an operator's kind: its published schema
        try:
            crds.validate(obj)
        except crds.SchemaInvalid as exc:
            raise ManifestError(f"{_describe(obj)} is not a valid {obj['apiVersion']} {obj['kind']}: {exc}") from None
        if obj.get("kind") == "RayJob":  # KubeRay's CRD embeds core/v1 PodTemplateSpec: checked as Kubernetes' own
            for template in pod_templates(obj):
                _validate_pod_template(obj, template)
        return
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        if obj.get("kind") != "MPIJob" or not (obj.get("spec") or {}).get("mpiReplicaSpecs"):
            raise ManifestError(f"{_describe(obj)} cannot be checked against a schema.") from None
    except kubernetes_validate.ValidationError as exc:
        path = ".".join(str(p) for p in exc.path) or "(the object)"
        raise ManifestError(
            f"{_describe(obj)} is not valid Kubernetes {KUBERNETES_VERSION}: {path}: {exc.message}"
        ) from None


def _validate_pod_template(obj: dict, template: dict) -> None:
    holder = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "pod"}, "template": template}
    try:
        kubernetes_validate.validate(holder, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        path = ".".join(str(p) for p in list(exc.path)[1:]) or "(the pod template)"
        raise ManifestError(
            f"{_describe(obj)}: a pod template is not valid Kubernetes {KUBERNETES_VERSION}: {path}: {exc.message}"
        ) from None


# -- resources ---------------------------------------------------------------------------------------------------
# Kubernetes quantities, as templates write them ("500m", "2Gi") and metrics.k8s.io reports them ("250000000n").
_CPU_SUFFIX = {"n": 1e-6, "u": 1e-3, "m": 1.0}
_BYTES_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def cpu_millis(quantity: Any) -> float:
    text = str(quantity).strip() or "0"
    for suffix, factor in _CPU_SUFFIX.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text) * 1000


def memory_bytes(quantity: Any) -> int:
    text = str(quantity).strip() or "0"
    for suffix, factor in _BYTES_SUFFIX.items():
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * factor)
    return int(float(text))


@dataclass
class Resources:
    gpus: int = 0
    cpu_millis: float = 0
    memory_bytes: int = 0
    pods: int = 0


def _pods_at_once(obj: dict, autoscaled: dict[str, int]) -> Iterator[tuple[dict, int]]:
    """Each pod spec of an object with how many copies may run at once; autoscaled Deployments at their maximum."""
    spec = obj.get("spec") or {}
    if obj["kind"] == "Deployment":
        replicas = 1 if spec.get("replicas") is None else int(spec["replicas"])
        for pod in pod_specs(obj):
            yield pod, max(replicas, autoscaled.get(obj["metadata"]["name"], 0))
    elif obj["kind"] == "Job":
        for pod in pod_specs(obj):
            yield pod, int(spec.get("parallelism", 1) or 1)
    elif obj["kind"] in REPLICA_SPECS:
        for replica in (spec.get(REPLICA_SPECS[obj["kind"]]) or {}).values():
            yield (
                ((replica or {}).get("template") or {}).get("spec") or {},
                int((replica or {}).get("replicas", 1) or 1),
            )
    elif obj["kind"] == "AppWrapper":
        for wrapped in wrapped_objects(obj):
            yield from _pods_at_once(wrapped, autoscaled)
    elif obj["kind"] == "RayJob":
        yield from _ray_pods(spec)


def _ray_pods(spec: dict) -> Iterator[tuple[dict, int]]:
    """A RayJob's pods at most: the head, each worker group's replicas (its maximum where Ray autoscales) times its
    hosts, and the submitter KubeRay starts in K8sJobMode (the one the job names, else KubeRay's default)."""
    cluster = spec.get("rayClusterSpec") or {}
    head, *workers = ray_groups(spec)
    yield ((head.get("template") or {}).get("spec") or {}), 1
    for group in workers:
        replicas = max(int(group.get("replicas") or 0), int(group.get("minReplicas") or 0))
        if cluster.get("enableInTreeAutoscaling"):
            replicas = max(replicas, int(group.get("maxReplicas") or 0))
        yield ((group.get("template") or {}).get("spec") or {}), replicas * int(group.get("numOfHosts") or 1)
    if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
        submitter = spec.get("submitterPodTemplate")
        yield ((submitter or {}).get("spec") or {}) if submitter else RAY_DEFAULT_SUBMITTER, 1


def requested_resources(objects: list[dict]) -> Resources:
    """What the objects ask for at most: each container's limits (else requests) times the pods at once."""
    autoscaled = {
        ((o.get("spec") or {}).get("scaleTargetRef") or {}).get("name", ""): int(o["spec"].get("maxReplicas", 0))
        for o in objects
        if o.get("kind") == "HorizontalPodAutoscaler"
    }
    total = Resources()
    for obj in objects:
        for pod, copies in _pods_at_once(obj, autoscaled):
            total.pods += copies
            for container in pod.get("containers") or []:
                resources = container.get("resources") or {}
                amounts = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
                total.gpus += copies * int(amounts.get("nvidia.com/gpu", 0) or 0)
                total.cpu_millis += copies * cpu_millis(amounts.get("cpu", 0) or 0)
                total.memory_bytes += copies * memory_bytes(amounts.get("memory", 0) or 0)
    return total


def preview_context() -> ManifestContext:
    return ManifestContext(
        job_id="00000000-0000-0000-0000-000000000000", namespace="gpulab-preview", owner="preview", course="preview"
    )


SESSION_SECRET_SUFFIX = "-session"  # noqa: S105 (a name, not a secret) <job_name>-session: the interactive session's token, made at submit


def session_secret(objects: list[dict], token: str) -> dict | None:
    """The Secret holding a session server's token, where a pod of the job reads `<job_name>-session` (the JupyterLab
    template's JUPYTER_TOKEN); None when none does. Made at submit, so the token is never in the job's script."""
    workload = next((o for o in objects if o.get("kind") in WORKLOAD_KINDS), None)
    if workload is None:
        return None
    name = f"gpulab-{workload['metadata']['labels'][LABEL_JOB][:8]}{SESSION_SECRET_SUFFIX}"
    refs = [
        ((env.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name")
        for pod in pod_specs(workload)
        for container in pod.get("containers") or []
        for env in container.get("env") or []
    ]
    if name not in refs:
        return None
    metadata = {"name": name, "namespace": workload["metadata"]["namespace"], "labels": workload["metadata"]["labels"]}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": "Opaque"}
    return {**secret, "stringData": {"token": token}}


def dump(objects: list[dict]) -> str:
    """A job's objects as its script: what is submitted, stored on the job and shown on its page."""
    return yaml.safe_dump_all(objects, sort_keys=False)


def load(script: str) -> list[dict]:
    """The objects of a script `dump` wrote: for the backend that submits them and the page that acts on them."""
    return [obj for obj in yaml.safe_load_all(script) if obj]
