"""Kubernetes templates: YAML objects with typed placeholders, rendered as data and checked before anything is sent.

A placeholder is first replaced by an opaque token, the YAML is parsed, and only then do the tokens in the
parsed objects become the values: a bare {{ n }} keeps its type (an int stays an int), a quoted "{{ n }}" is
text, and a string that holds a newline, ": ", "{", "---" or "&anchor" is one string scalar. Values never
meet YAML syntax. Then every object is checked:
    - the kind is one the portal manages (no Namespace, ClusterRole, RoleBinding, …);
    - pod specs use no host namespaces, hostPath volumes, privileged containers or other service accounts;
    - the namespace and the portal's labels are forced;
    - the object validates against the pinned Kubernetes version's schema (kubernetes-validate).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import kubernetes_validate
import yaml

from core.templating.params import Param
from core.templating.placeholders import PLACEHOLDER, not_a_parameter, stray_braces

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
}
WORKLOAD_KINDS = {"Deployment", "Job", "MPIJob", "PyTorchJob", "AppWrapper"}
# What an AppWrapper of the portal may wrap: its one Job (the portal follows the Job's pods by their labels).
WRAPPABLE_KINDS = {("batch/v1", "Job")}
# Operator kinds whose pod templates sit in a map of replica types: kind → that map's field in the spec.
REPLICA_SPECS = {"MPIJob": "mpiReplicaSpecs", "PyTorchJob": "pytorchReplicaSpecs"}
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
        objects.append(check_object(_fill(document, slots), ctx))
    workloads = [obj for obj in objects if obj["kind"] in WORKLOAD_KINDS]
    if len(workloads) != 1:
        raise ManifestError(
            "A Kubernetes template runs exactly one Deployment, Job, MPIJob or PyTorchJob; this one has "
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
    """A value inside an `sh -c` script would be read by the shell: values must come in as environment variables."""
    for pod in pod_specs(document):
        for container, argv in _exec_commands(pod):
            for flag, script in pairwise(argv):
                if flag in {"-c", "-lc", "-ec"} and isinstance(script, str) and TOKEN.search(script):
                    raise ManifestError(
                        f"Container {container}: a placeholder inside a shell script would be run by the shell. "
                        "Pass the value as an environment variable (env: - name: MODEL value: {{ model }}) and "
                        'use "$MODEL" in the script.'
                    )


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


def pod_specs(obj: dict) -> Iterator[dict]:
    """Every pod spec in an object: Deployments and Jobs have one, an MPIJob or PyTorchJob one per replica type, an
    AppWrapper those of the objects it wraps."""
    spec = obj.get("spec") or {}
    if obj.get("kind") in {"Deployment", "Job"}:
        yield ((spec.get("template") or {}).get("spec")) or {}
    elif obj.get("kind") in REPLICA_SPECS:
        for replica in (spec.get(REPLICA_SPECS[obj["kind"]]) or {}).values():
            yield (((replica or {}).get("template") or {}).get("spec")) or {}
    elif obj.get("kind") == "AppWrapper":
        for wrapped in wrapped_objects(obj):
            yield from pod_specs(wrapped)


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


def _check(obj: dict, ctx: ManifestContext) -> None:
    kind_key = (obj.get("apiVersion"), obj.get("kind"))
    if kind_key not in ALLOWED_KINDS:
        allowed = ", ".join(sorted(kind for _, kind in ALLOWED_KINDS))
        raise ManifestError(f"{obj.get('apiVersion')}/{obj.get('kind')} objects are not allowed; use {allowed}.")
    if not isinstance(obj.get("metadata"), dict) or not obj["metadata"].get("name"):
        raise ManifestError(f"Every {obj.get('kind')} needs metadata.name (use {{{{ job_name }}}} to keep it unique).")
    what = _describe(obj)
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
