"""Kueue on a Kubernetes cluster: what Test connection finds, the course queues the portal keeps, and the objects it
labels for them.

Where Kueue runs (kueue.x-k8s.io/v1beta1, as Kueue v0.13 publishes it), every object the portal creates carries the
course's LocalQueue in `kueue.x-k8s.io/queue-name` and Jobs are created suspended: Kueue's Workload for the Job then
decides when it starts. A course either names an existing LocalQueue (present in each of its namespaces; the portal
only checks it) or lets the portal keep a ClusterQueue for it in the cluster's cohort and a LocalQueue in each of its
namespaces, applied idempotently with the namespace (backend.ensure_namespace) and checked against Kueue's published
schema (crds/kueue.yaml) before they are sent.
"""

from __future__ import annotations

from core.course_choices import KueuePreemption, Role

from . import crds
from .api import Kind
from .manifests import LABEL_COURSE, MANAGED_BY, MANAGED_BY_LABEL, ManifestError, label_value
from .namespaces import PREFIX, _dns_label
from .plans import QueuePlan
from .settings import ADDON_LABELS, cluster_settings, course_settings

KUEUE = "kueue.x-k8s.io/v1beta1"
VISIBILITY = "visibility.kueue.x-k8s.io/v1beta1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GPU = "nvidia.com/gpu"
OPTIONAL_SPEC = ("cohort",)  # what the portal leaves out of a queue's spec when the setting is empty
# The objects Kueue makes a Workload for, owned by them.
OWNER_KINDS = ("Job", "MPIJob", "PyTorchJob", "RayJob", "AppWrapper")

CLUSTER_QUEUE = Kind(KUEUE, "ClusterQueue", "clusterqueues", namespaced=False)
LOCAL_QUEUE = Kind(KUEUE, "LocalQueue", "localqueues")
WORKLOAD = Kind(KUEUE, "Workload", "workloads")
PENDING_IN_LOCAL_QUEUE = Kind(VISIBILITY, "LocalQueue", "localqueues")

# What Test connection looks for by discovery: (fact, kind, what it is, what the portal does with it).
ADDONS = [
    (fact, kind, ADDON_LABELS[fact], use)
    for fact, kind, use in [
        ("kueue", WORKLOAD, "jobs go in their course's queue"),
        ("kueue_visibility", PENDING_IN_LOCAL_QUEUE, "students see their place in the queue"),
        ("training_operator", Kind("kubeflow.org/v1", "PyTorchJob", "pytorchjobs"), ""),
        (
            "kuberay",
            Kind("ray.io/v1", "RayJob", "rayjobs"),
            "RayJob templates run, with the Ray dashboard through the portal",
        ),
        ("appwrapper", Kind("workload.codeflare.dev/v1beta2", "AppWrapper", "appwrappers"), ""),
    ]
]

# What the portal's account must be allowed on a cluster with Kueue, and what it cannot do without each.
NEEDED_ACCESS = [
    ("list", "kueue.x-k8s.io", "workloads", "", "follow jobs through Kueue (admitted, preempted, requeued)"),
    ("list", "kueue.x-k8s.io", "clusterqueues", "", "show course queues' quota and usage"),
    ("create", "kueue.x-k8s.io", "clusterqueues", "", "create the ClusterQueues of courses the portal manages"),
    ("patch", "kueue.x-k8s.io", "clusterqueues", "", "change a managed course queue's quota"),
    ("create", "kueue.x-k8s.io", "localqueues", "", "create LocalQueues in course namespaces"),
    ("get", "kueue.x-k8s.io", "localqueues", "", "check that a course's LocalQueue exists"),
    (
        "get",
        "visibility.kueue.x-k8s.io",
        "localqueues",
        "pendingworkloads",
        "tell students their place in the queue (without it: “position unknown”)",
    ),
]

# Kueue's three preemption settings for each policy an admin can pick, and the policy in words for students.
PREEMPTION = {
    KueuePreemption.MLBATCH: {
        "withinClusterQueue": "LowerOrNewerEqualPriority",
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "Never"},
    },
    KueuePreemption.LOWER_PRIORITY: {
        "withinClusterQueue": "LowerPriority",
        "reclaimWithinCohort": "LowerPriority",
        "borrowWithinCohort": {"policy": "Never"},
    },
    KueuePreemption.NEVER: {
        "withinClusterQueue": "Never",
        "reclaimWithinCohort": "Never",
        "borrowWithinCohort": {"policy": "Never"},
    },
}
WITHIN_QUEUE_WORDS = {
    "LowerOrNewerEqualPriority": "a job of the course with higher priority, or an older one of equal priority, may "
    "stop a newer one to start",
    "LowerPriority": "a job of the course with higher priority may stop a lower-priority one to start",
    "Never": "no job of the course stops another",
}
RECLAIM_WORDS = {
    "Any": "GPUs lent to other courses are taken back at once, stopping the borrowers' jobs",
    "LowerPriority": "GPUs lent to other courses are taken back only from lower-priority jobs",
    "Never": "GPUs lent to other courses are not taken back: they return as the borrowers' jobs end",
}


def uses_kueue(cluster) -> bool:
    return bool(cluster_settings(cluster).kube_addons.get("kueue"))


def cluster_queue_name(course) -> str:
    return _dns_label(PREFIX, course.slug)


def local_queue_name(course) -> str:
    return course_settings(course).kueue_local_queue or cluster_queue_name(course)


def plan_for(course, cluster) -> QueuePlan | None:
    """The course's queue on this cluster; None where the cluster has no Kueue."""
    if not uses_kueue(cluster):
        return None
    local_queue = course_settings(course).kueue_local_queue
    if local_queue:
        return QueuePlan(local_queue=local_queue)
    students = max(1, course.enrollments.filter(role=Role.STUDENT).count())
    return QueuePlan(local_queue=local_queue_name(course), cluster_queue=cluster_queue(course, cluster, students))


def cluster_queue(course, cluster, students: int) -> dict:
    """The ClusterQueue the portal keeps for a course: the course's per-student limits times its students as the
    nominal quota, in the cluster's cohort, with the limits and preemption policy the admin picked."""
    own, shared = course_settings(course), cluster_settings(cluster)
    gpus: dict[str, object] = {"name": GPU, "nominalQuota": course.max_gpus * students}
    if own.kueue_borrowing_limit is not None and shared.kueue_cohort:
        gpus["borrowingLimit"] = own.kueue_borrowing_limit
    if own.kueue_lending_limit is not None and shared.kueue_cohort:
        gpus["lendingLimit"] = own.kueue_lending_limit
    resources: list[dict[str, object]] = [
        {"name": "cpu", "nominalQuota": own.max_cpus * students},
        {"name": "memory", "nominalQuota": f"{own.max_memory_gb * students}Gi"},
        gpus,
    ]
    spec: dict[str, object] = {
        "namespaceSelector": {"matchLabels": {LABEL_COURSE: label_value(course.slug)}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [
            {
                "coveredResources": [r["name"] for r in resources],
                "flavors": [{"name": shared.kueue_flavor or "default-flavor", "resources": resources}],
            }
        ],
        "preemption": PREEMPTION[KueuePreemption(own.kueue_preemption or KueuePreemption.MLBATCH)],
    }
    if shared.kueue_cohort:
        spec["cohort"] = shared.kueue_cohort
    return checked(
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": cluster_queue_name(course), "labels": _labels(course)},
            "spec": spec,
        }
    )


def local_queue(plan: QueuePlan, namespace: str, course_label: str) -> dict:
    cluster_queue_name = (plan.cluster_queue or {}).get("metadata", {}).get("name", "")
    return checked(
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {
                "name": plan.local_queue,
                "namespace": namespace,
                "labels": {MANAGED_BY_LABEL: MANAGED_BY, LABEL_COURSE: course_label},
            },
            "spec": {"clusterQueue": cluster_queue_name},
        }
    )


def _labels(course) -> dict[str, str]:
    return {MANAGED_BY_LABEL: MANAGED_BY, LABEL_COURSE: label_value(course.slug)}


def checked(obj: dict) -> dict:
    try:
        crds.validate(obj)
    except crds.SchemaInvalid as exc:
        raise ManifestError(f"{obj['kind']} “{obj['metadata']['name']}” is not valid Kueue {KUEUE}: {exc}") from None
    return obj


def put_in_queue(objects: list[dict], queue: str, job_name: str) -> None:
    """Label the job's workload with its queue; a Job is created suspended, for Kueue to start it when admitted.

    Kueue's Workload names the object that owns it: the portal finds a job's Workload by that name (one list per
    namespace per cycle), so a Job, MPIJob, PyTorchJob, RayJob or AppWrapper must be named {{ job_name }}. An
    AppWrapper is itself what Kueue admits: it is labelled and suspended, and the Job it wraps is neither (its
    controller creates the Job only once Kueue has let the AppWrapper go)."""
    for obj in objects:
        if obj["kind"] not in {"Job", "Deployment", *OWNER_KINDS}:
            continue
        obj["metadata"].setdefault("labels", {})[QUEUE_LABEL] = queue
        if obj["kind"] in OWNER_KINDS and obj["metadata"]["name"] != job_name:
            raise ManifestError(
                f"On a cluster with Kueue the {obj['kind']} must be named {{{{ job_name }}}}, not "
                f"{obj['metadata']['name']}."
            )
        if obj["kind"] in {"Job", "AppWrapper", "RayJob"}:  # a RayJob's own suspend: no Ray cluster until admitted
            if obj["kind"] == "RayJob":
                _check_ray_for_kueue(obj["spec"])
            obj["spec"]["suspend"] = True
        elif obj["kind"] in {"MPIJob", "PyTorchJob"}:  # the operators' own suspend, which Kueue's integrations use
            obj["spec"].setdefault("runPolicy", {})["suspend"] = True
        else:  # Kueue's pod integration admits a Deployment's pods one by one, by the label on the pod template
            template = obj["spec"].setdefault("template", {}).setdefault("metadata", {})
            template.setdefault("labels", {})[QUEUE_LABEL] = queue


def _check_ray_for_kueue(spec: dict) -> None:
    """What Kueue v0.13's RayJob webhook refuses, said before anything is sent (rayjob_webhook.go validateCreate)."""
    cluster = spec.get("rayClusterSpec") or {}
    workers = cluster.get("workerGroupSpecs") or []
    if not spec.get("shutdownAfterJobFinishes"):
        raise ManifestError(
            "On a cluster with Kueue a RayJob must set shutdownAfterJobFinishes: true (Kueue frees its quota only "
            "when the Ray cluster is gone)."
        )
    if cluster.get("enableInTreeAutoscaling"):
        raise ManifestError("On a cluster with Kueue a RayJob cannot autoscale (enableInTreeAutoscaling).")
    if len(workers) > 7:
        raise ManifestError(f"On a cluster with Kueue a RayJob has at most 7 worker groups, not {len(workers)}.")
    if any((group or {}).get("groupName") == "head" for group in workers):
        raise ManifestError("On a cluster with Kueue no worker group of a RayJob may be named head.")


def preemption_in_words(preemption: dict, cohort: str) -> str:
    within = WITHIN_QUEUE_WORDS.get(preemption.get("withinClusterQueue", "Never"), "")
    sentence = f"In this course's queue {within}."
    if cohort:
        reclaim = RECLAIM_WORDS.get(preemption.get("reclaimWithinCohort", "Never"), "")
        sentence += f" In cohort {cohort}, {reclaim}."
    return sentence
