"""Kubernetes through its API: a job is the set of objects labelled with its UUID in the course's namespace.

- submit creates the namespace (with its quota) if needed, then every object; an object that already exists
  with this job's label is an earlier attempt's and is kept, so a retried submit creates nothing twice; on
  failure the objects this attempt created are deleted again.
- poll lists the portal's pods once per namespace per cycle for all of the cluster's jobs there.
- cancel deletes everything with the job's label (foreground propagation) and waits until it is gone.
The scheduler id is "<namespace>/<job UUID>".
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import re
import secrets
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path

from django.core.cache import cache
from django.utils import timezone

from core.choices import JobState
from core.course_choices import Role

from ...base import (
    BackendError,
    ClusterBackend,
    ClusterUnreachable,
    ConnectionReport,
    LogChunk,
    NodeUsage,
    NotSupported,
    QueuedJob,
    QueueSummary,
    QueueView,
    SchedulerStatus,
    SubmitRejected,
    SubmitRequest,
    TaskUsage,
    complete_utf8,
)
from . import appwrapper, appwrapper_status, kueue, kueue_queue, kueue_sessions, kueue_status
from . import ray as kube_ray
from . import status as kube_status
from .api import KINDS, NAMESPACE, POD, Conflict, KubeAPI, NotFound, kind_of
from .manifests import (
    LABEL_COURSE,
    LABEL_JOB,
    LABEL_ROLE,
    LABEL_WORKLOAD,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    cpu_millis,
    load,
    memory_bytes,
    session_secret,
)
from .namespaces import namespace_for
from .plans import NamespacePlan, QueuePlan
from .settings import cluster_settings, course_settings

logger = logging.getLogger(__name__)

SCHEDULER_ID = re.compile(r"^(?P<namespace>[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)/(?P<job>[0-9a-f-]{36})$")
WORKLOADS = {"Deployment": KINDS[("apps/v1", "Deployment")], "Job": KINDS[("batch/v1", "Job")]}
MPIJOB = KINDS[("kubeflow.org/v2beta1", "MPIJob")]
PYTORCHJOB = KINDS[("kubeflow.org/v1", "PyTorchJob")]
RAYJOB = kube_ray.RAYJOB
HPA = KINDS[("autoscaling/v2", "HorizontalPodAutoscaler")]
SERVICE = KINDS[("v1", "Service")]
# Deleted in this order on cancel: what makes pods first, pods last.
OWNED = [
    appwrapper.APPWRAPPER,
    KINDS[("apps/v1", "Deployment")],
    KINDS[("batch/v1", "Job")],
    MPIJOB,
    PYTORCHJOB,
    RAYJOB,  # its RayCluster and submitter Job go with it (KubeRay owns them); their pods carry the job's label
    HPA,
    KINDS[("networking.k8s.io/v1", "Ingress")],
    SERVICE,
    KINDS[("v1", "ConfigMap")],
    KINDS[("v1", "Secret")],
    KINDS[("v1", "PersistentVolumeClaim")],
    POD,
]
CANCEL_WAIT_SECONDS = 60
NAMESPACE_CACHE_SECONDS = 300
QUOTA_NAME = "gpulab-quota"
LIMITS_NAME = "gpulab-limits"
DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container"

# What Test connection asks SelfSubjectAccessReview, and what the portal cannot do without each.
NEEDED_ACCESS = [
    ("create", "", "namespaces", "", "create per-course namespaces"),
    ("create", "", "resourcequotas", "", "set course quotas"),
    ("patch", "", "resourcequotas", "", "change course quotas"),
    ("create", "", "limitranges", "", "set default container limits"),
    ("create", "apps", "deployments", "", "start inference servers"),
    ("patch", "apps", "deployments", "scale", "scale inference servers"),
    ("create", "batch", "jobs", "", "start training jobs"),
    ("create", "", "services", "", "expose inference servers"),
    ("create", "", "persistentvolumeclaims", "", "create model caches"),
    ("create", "", "secrets", "", "give JupyterLab sessions their token"),
    ("get", "", "secrets", "", "open JupyterLab sessions"),
    ("create", "", "pods", "exec", "open terminals in jobs"),
    ("create", "autoscaling", "horizontalpodautoscalers", "", "autoscale servers"),
    ("list", "", "pods", "", "follow jobs"),
    ("get", "", "pods", "log", "show logs"),
    ("create", "", "services", "proxy", "send Try it prompts"),
    ("get", "", "services", "proxy", "open JupyterLab sessions"),
    ("delete", "apps", "deployments", "", "cancel servers"),
    ("delete", "batch", "jobs", "", "cancel training jobs"),
    ("delete", "", "pods", "", "clean up pods"),
    ("delete", "", "persistentvolumeclaims", "", "clean up volumes"),
    ("delete", "", "secrets", "", "clean up session tokens"),
]


def split_id(scheduler_id: str) -> tuple[str, str]:
    match = SCHEDULER_ID.match(scheduler_id)
    if match is None:
        raise BackendError(f"{scheduler_id!r} is not a Kubernetes job id of this portal.")
    return match["namespace"], match["job"]


def labels(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("labels") or {}


def name_of(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def _owner_kind(queued: dict | None) -> str:
    """The kind of the object that owns a Kueue Workload (Job, PyTorchJob, RayJob, …), "" when none is. An
    AppWrapper's state is read from the AppWrapper itself (`_status`'s wrapper), never through this."""
    owners = ((queued or {}).get("metadata") or {}).get("ownerReferences") or []
    kinds = set(kueue.OWNER_KINDS) - {"AppWrapper"}
    return next((o.get("kind", "") for o in owners if o.get("kind") in kinds), "")


def _ray_order(pod: dict) -> int:
    """A RayJob's pods in the order their logs matter: the submitter's (the entrypoint's output), the head, workers."""
    return {"head": 1, "worker": 2}.get(labels(pod).get(kube_ray.NODE_TYPE_LABEL, ""), 0)


class KubernetesBackend(ClusterBackend):
    kind = "kubernetes"
    admin_fieldsets = (
        (
            "Kubernetes: API server",
            {
                "fields": ["api_url", "ca_certificate", "kube_context", "server_version"],
                "description": "The bearer token or kubeconfig goes on the cluster's service account, encrypted.",
            },
        ),
        (
            "Kubernetes: GPUs and add-ons",
            {"fields": ["gpu_sharing_factor", "prometheus_url", "has_mpi_operator", "has_metrics_api"]},
        ),
        (
            "Kubernetes: Kueue",
            {
                "fields": ["kube_addons", "kueue_cohort", "kueue_flavor", "lab_reservations"],
                "description": "Where Test connection finds Kueue, every course's jobs go in the course's queue "
                "(set per course), and lab sessions raise the course's queue while they are on.",
            },
        ),
    )

    def __init__(self, cluster, account):
        super().__init__(cluster, account)
        self._pending: list[SchedulerStatus] = []  # what this cycle's poll found waiting, for queue()
        self._waiting: list[kueue_queue.Waiting] = []  # of those, the ones waiting in Kueue
        self._usage: dict[str, kueue_status.QueueUsage] = {}  # this cycle's ClusterQueues
        self._rayjobs: dict[str, dict[str, dict]] = {}  # this cycle's RayJobs: namespace → job → RayJob

    @cached_property
    def api(self) -> KubeAPI:
        return KubeAPI(self.cluster, self.account)

    # -- submit -----------------------------------------------------------------------------------------------
    @staticmethod
    def _objects(request: SubmitRequest) -> tuple[str, list[dict]]:
        objects = load(request.script)
        namespaces = {(o.get("metadata") or {}).get("namespace") for o in objects}
        namespace = namespaces.pop() if len(namespaces) == 1 else None
        if not objects or not isinstance(namespace, str):
            raise SubmitRejected("The job's objects must all carry one namespace; launch it again.")
        return namespace, objects

    def submit(self, request: SubmitRequest) -> str:
        namespace, objects = self._objects(request)
        if request.prepared is not None:
            self.ensure_namespace(request.prepared)
        try:
            return self._create_all(request, namespace, objects)
        except NotFound:
            if request.prepared is None:
                raise
            # The namespace was deleted behind the portal's back while remembered as present: make it again.
            self.ensure_namespace(request.prepared, force=True)
            return self._create_all(request, namespace, objects)

    def _create_all(self, request: SubmitRequest, namespace: str, objects: list[dict]) -> str:
        created: list[dict] = []
        secret = session_secret(objects, request.session_token or secrets.token_urlsafe(32))
        objects = [secret, *objects] if secret else objects  # before the pod that reads it
        try:
            for obj in objects:
                kind = kind_of(obj)
                try:
                    self.api.create(kind.collection(namespace), obj)
                    created.append(obj)
                except Conflict:
                    existing = self.api.get(kind.item(namespace, name_of(obj)))
                    if labels(existing).get(LABEL_JOB) != str(request.job_id):
                        raise SubmitRejected(
                            f"A {obj['kind']} named “{name_of(obj)}” already exists in namespace {namespace} and "
                            "belongs to something else. Delete it, or pick another name."
                        ) from None
        except BackendError:
            self._delete_quietly(namespace, created)
            raise
        return f"{namespace}/{request.job_id}"

    def _delete_quietly(self, namespace: str, objects: list[dict]) -> None:
        for obj in reversed(objects):
            try:
                self.api.delete(kind_of(obj).item(namespace, name_of(obj)))
            except BackendError as exc:
                logger.warning("could not remove %s %s/%s: %s", obj.get("kind"), namespace, name_of(obj), exc)

    def find_submitted(self, request: SubmitRequest) -> str | None:
        namespace, objects = self._objects(request)
        for obj in objects:
            try:
                existing = self.api.get(kind_of(obj).item(namespace, name_of(obj)))
            except NotFound:
                return None
            if labels(existing).get(LABEL_JOB) != str(request.job_id):
                return None
        return f"{namespace}/{request.job_id}"

    def ensure_namespace(self, plan: NamespacePlan, *, force: bool = False) -> None:
        """Create the namespace and set its quota and limits; remembered for a while so launches stay cheap."""
        digest = hashlib.sha256(repr((plan.labels, plan.quota, plan.limits, plan.queue)).encode()).hexdigest()[:16]
        # A changed quota or queue is applied at once; a cluster row made again (same id, new row) starts afresh.
        key = f"gpulab:k8s-ns:{self.cluster.pk}:{self.cluster.created_at.timestamp()}:{plan.name}:{digest}"
        if not force and cache.get(key):
            return
        try:
            self.api.get(NAMESPACE.item("", plan.name))
        except NotFound:
            namespace = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": plan.name, "labels": plan.labels},
            }
            with contextlib.suppress(Conflict):  # another worker made it just now
                self.api.create(NAMESPACE.collection(), namespace)
        meta = {"namespace": plan.name, "labels": {MANAGED_BY_LABEL: MANAGED_BY}}
        self._upsert(
            {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": QUOTA_NAME, **meta}},
            {"hard": plan.quota},
        )
        self._upsert(
            {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": LIMITS_NAME, **meta}},
            {"limits": [{"type": "Container", **plan.limits}]},
        )
        if plan.queue is not None:
            self.ensure_queue(plan.queue, plan.name, plan.labels.get(LABEL_COURSE, ""))
        cache.set(key, True, NAMESPACE_CACHE_SECONDS)

    def ensure_queue(self, queue: QueuePlan, namespace: str, course_label: str) -> None:
        """The course's Kueue queue for this namespace: the ClusterQueue and LocalQueue the portal keeps, made or
        brought to the plan (get, then create or merge-patch); or the admin's LocalQueue, which must exist."""
        if queue.cluster_queue is None:
            try:
                self.api.get(kueue.LOCAL_QUEUE.item(namespace, queue.local_queue))
            except NotFound:
                raise SubmitRejected(
                    f"The course's Kueue queue (LocalQueue “{queue.local_queue}”) does not exist in namespace "
                    f"{namespace} on {self.cluster.display_name}. Ask an admin to create it, or to clear the course's "
                    "“existing Kueue LocalQueue” so that the portal manages the course's queue."
                ) from None
            return
        # A lab session on now keeps its GPUs on the queue (kueue_sessions.py).
        self._apply(kueue.CLUSTER_QUEUE, "", queue.cluster_queue, keep=kueue_sessions.keep_raise)
        self._apply(kueue.LOCAL_QUEUE, namespace, kueue.local_queue(queue, namespace, course_label))

    def _apply(self, kind, namespace: str, obj: dict, keep=None) -> None:
        """`keep(existing, obj)`: what of the object on the cluster the update keeps."""
        path = kind.item(namespace, name_of(obj))
        try:
            existing = self.api.get(path)
        except NotFound:
            with contextlib.suppress(Conflict):  # another worker made it just now
                self.api.create(kind.collection(namespace), obj)
            return
        obj = keep(existing, obj) if keep else obj
        if existing.get("spec") != obj["spec"]:
            dropped = {
                k: None for k in kueue.OPTIONAL_SPEC if k in (existing.get("spec") or {}) and k not in obj["spec"]
            }
            spec = {**dropped, **obj["spec"]}  # a merge patch removes a key only when told (a cohort given up)
            self.api.patch(path, {"spec": spec, "metadata": {"labels": obj["metadata"]["labels"]}})

    def _upsert(self, obj: dict, spec: dict) -> None:
        kind, namespace = kind_of(obj), obj["metadata"]["namespace"]
        try:
            self.api.create(kind.collection(namespace), {**obj, "spec": spec})
        except Conflict:
            self.api.patch(kind.item(namespace, name_of(obj)), {"spec": spec})

    # -- poll -------------------------------------------------------------------------------------------------
    def poll(self, scheduler_ids: list[str]) -> dict[str, SchedulerStatus]:
        by_namespace: dict[str, dict[str, str]] = defaultdict(dict)
        for scheduler_id in scheduler_ids:
            if SCHEDULER_ID.match(scheduler_id):
                namespace, job = split_id(scheduler_id)
                by_namespace[namespace][job] = scheduler_id
        statuses: dict[str, SchedulerStatus] = {}
        self._waiting, self._usage, self._rayjobs = [], {}, {}
        queued = kueue.uses_kueue(self.cluster)
        if queued:
            self._usage = kueue_queue.cluster_queues(self.api, kueue.CLUSTER_QUEUE)
        for namespace, jobs in by_namespace.items():
            pods_by_job = self._job_pods(namespace)
            workloads = self._queue_workloads(namespace, jobs) if queued else {}
            wrappers = self._wrappers(namespace) if self._has("appwrapper") else {}
            for job, scheduler_id in jobs.items():
                pods = pods_by_job.get(job, [])
                status = self._status(namespace, job, scheduler_id, pods, workloads.get(job), wrappers.get(job))
                if status is not None:
                    statuses[scheduler_id] = status
        self._pending = [status for status in statuses.values() if status.state == JobState.PENDING]
        return statuses

    def _status(
        self,
        namespace: str,
        job: str,
        scheduler_id: str,
        pods: list[dict],
        queued: dict | None,
        wrapper: dict | None = None,
    ) -> SchedulerStatus | None:
        if wrapper is not None:  # the AppWrapper has the last word over its Job's pods (retries, resets)
            wrapped = appwrapper_status.status(scheduler_id, wrapper, pods, queued)
            return wrapped if queued is None else self._in_queue(wrapped, namespace, queued)
        workload = labels(pods[0]).get(LABEL_WORKLOAD, "") if pods else _owner_kind(queued)
        if workload == "RayJob" or (not workload and self._has("kuberay")):
            status = self._ray_status(namespace, job, scheduler_id, pods, queued)
            if status is not None or workload == "RayJob":
                return status if status is None or queued is None else self._in_queue(status, namespace, queued)
        status = kube_status.from_pods(scheduler_id, workload, pods) if workload else None
        # No pods yet, or only ended ones of a run Kueue stopped (evicted, no longer admitted): in Kueue's hands.
        in_queue = not pods or not kueue_status.holds(queued or {}, "Admitted")
        if status is None and queued is not None and in_queue and not kueue_status.holds(queued, "Finished"):
            status = kueue_status.waiting(scheduler_id, queued)
        if status is None:
            found = self._workload(namespace, job, workload)
            status = kube_status.from_workload(scheduler_id, found, pods) if found else None
        if status is None or queued is None:
            return status
        return self._in_queue(status, namespace, queued)

    def _ray_status(
        self, namespace: str, job: str, scheduler_id: str, pods: list[dict], queued: dict | None
    ) -> SchedulerStatus | None:
        """A RayJob's state from its own status (ray.py), never from its pods alone: a Ray cluster's pods run while the
        Ray job waits, and end when KubeRay removes the cluster. Kueue's words while Kueue has not admitted it."""
        held = queued is not None and not kueue_status.holds(queued, "Admitted")
        if held and not pods and not kueue_status.holds(queued or {}, "Finished"):
            return kueue_status.waiting(scheduler_id, queued or {})
        rayjob = self._cycle_rayjob(namespace, job)
        if rayjob is None:
            return None
        raycluster = self._raycluster(namespace, job) if kube_ray.needs_cluster(rayjob, pods) else None
        return kube_ray.status_of(scheduler_id, rayjob, pods, raycluster)

    def _cycle_rayjob(self, namespace: str, job: str) -> dict | None:
        """The job's RayJob from this poll cycle's one list of the namespace's RayJobs, made when first needed: a
        cycle asks once per namespace, never once per job."""
        if namespace not in self._rayjobs:
            try:
                found = self.api.list(RAYJOB.collection(namespace), f"{MANAGED_BY_LABEL}={MANAGED_BY}")
            except NotFound:
                found = []
            self._rayjobs[namespace] = {labels(r).get(LABEL_JOB, ""): r for r in found if not labels(r).get(LABEL_ROLE)}
        return self._rayjobs[namespace].get(job)

    def rayjob(self, namespace: str, job: str) -> dict | None:
        """The job's RayJob (the one object of its kind with the job's label), or None."""
        try:
            items = self.api.list(RAYJOB.collection(namespace), f"{LABEL_JOB}={job}")
        except NotFound:
            return None
        items = [i for i in items if labels(i).get(LABEL_JOB) == job and not labels(i).get(LABEL_ROLE)]
        return items[0] if items else None

    def _raycluster(self, namespace: str, job: str) -> dict | None:
        """The RayCluster KubeRay made for the job's RayJob (it carries the RayJob's labels); None where the portal
        may not read it: it only explains a wait."""
        try:
            items = self.api.list(kube_ray.RAYCLUSTER.collection(namespace), f"{LABEL_JOB}={job}")
        except BackendError as exc:
            logger.info("cannot read the RayCluster of job %s: %s", job, exc)
            return None
        items = [i for i in items if labels(i).get(LABEL_JOB) == job]
        return items[0] if items else None

    def _in_queue(self, status: SchedulerStatus, namespace: str, queued: dict) -> SchedulerStatus:
        """The status with what Kueue did with the job, and, running on borrowed GPUs, what that means."""
        reason = status.reason
        usage = self._usage.get(kueue_status.cluster_queue_of(queued))
        if status.state == JobState.RUNNING and usage is not None and usage.borrowed:
            reason = f"{reason}; {usage.borrowing_words()}" if reason else usage.borrowing_words()
        if status.state == JobState.PENDING:
            self._waiting.append(
                kueue_queue.Waiting(
                    status.scheduler_id,
                    namespace,
                    (queued.get("spec") or {}).get("queueName", ""),
                    name_of(queued),
                    kueue_status.cluster_queue_of(queued),
                    status.reason,
                )
            )
        steps = sorted([*status.milestones, *kueue_status.milestones(queued)], key=lambda step: step.at)
        return dataclasses.replace(status, reason=reason[:255], milestones=tuple(steps))

    def _queue_workloads(self, namespace: str, jobs: dict[str, str]) -> dict[str, dict]:
        """Kueue's Workloads in a namespace, by the portal job whose Job owns each: one list per namespace per cycle.
        Kueue names the owner; the portal's Job is named after the job (kueue.put_in_queue)."""
        try:
            workloads = self.api.list(kueue.WORKLOAD.collection(namespace))
        except NotFound:
            return {}
        by_name = {f"gpulab-{job[:8]}": job for job in jobs}
        found: dict[str, dict] = {}
        for workload in sorted(workloads, key=lambda w: (w.get("metadata") or {}).get("creationTimestamp") or ""):
            for owner in (workload.get("metadata") or {}).get("ownerReferences") or []:
                if owner.get("kind") in kueue.OWNER_KINDS and owner.get("name") in by_name:
                    found[by_name[owner["name"]]] = workload
        return found

    def queue(self) -> QueueView:
        """What this cycle's poll read of the pending pods' conditions: Kubernetes keeps no queue order and makes no
        start estimate, so that is all there is to say (no call of its own). With Kueue: the place of each waiting
        job in its queue, one visibility call per LocalQueue holding one (kueue_queue.py)."""
        if self._waiting:
            return kueue_queue.view(self.api, self._waiting, self._usage)
        jobs = tuple(QueuedJob(status.scheduler_id, JobState.PENDING, reason=status.reason) for status in self._pending)
        return QueueView(
            jobs=jobs,
            ordered=False,
            note="Kubernetes starts a pod as soon as a node has room for it, in no queue order, and estimates no "
            "start time.",
        )

    def _job_pods(self, namespace: str) -> dict[str, list[dict]]:
        """All of the portal's pods in a namespace, by job: the one list call per namespace per cycle."""
        try:
            pods = self.api.list(POD.collection(namespace), f"{MANAGED_BY_LABEL}={MANAGED_BY}")
        except NotFound:
            pods = []
        grouped: dict[str, list[dict]] = defaultdict(list)
        for pod in pods:
            pod_labels = labels(pod)
            if pod_labels.get(MANAGED_BY_LABEL) == MANAGED_BY and not pod_labels.get(LABEL_ROLE):
                grouped[pod_labels.get(LABEL_JOB, "")].append(pod)
        return grouped

    def _wrappers(self, namespace: str) -> dict[str, dict]:
        """The portal's AppWrappers in a namespace, by job: one list per namespace per cycle, where the CRD is."""
        try:
            found = self.api.list(appwrapper.APPWRAPPER.collection(namespace), f"{MANAGED_BY_LABEL}={MANAGED_BY}")
        except NotFound:
            return {}
        return {labels(w).get(LABEL_JOB, ""): w for w in found if not labels(w).get(LABEL_ROLE)}

    def _has(self, addon: str) -> bool:
        return bool(cluster_settings(self.cluster).kube_addons.get(addon))

    def _workload(self, namespace: str, job: str, hint: str = "") -> dict | None:
        kinds = [WORKLOADS[hint]] if hint in WORKLOADS else [*WORKLOADS.values()]
        if hint == "MPIJob" or (not hint and cluster_settings(self.cluster).has_mpi_operator):
            kinds.append(MPIJOB)
        if hint == "PyTorchJob" or (not hint and self._has("training_operator")):
            kinds.append(PYTORCHJOB)
        for kind in kinds:
            try:
                items = self.api.list(kind.collection(namespace), f"{LABEL_JOB}={job}")
            except NotFound:
                continue
            items = [i for i in items if labels(i).get(LABEL_JOB) == job and not labels(i).get(LABEL_ROLE)]
            if items:
                return items[0]
        return None

    def course_queue(self, course) -> QueueSummary:
        """The course's ClusterQueue now: its own where the portal manages it, else the one the course's LocalQueue
        feeds (read in the namespace of the course, or of its first student)."""
        name = kueue.cluster_queue_name(course)
        if course_settings(course).kueue_local_queue:
            student = course.enrollments.filter(role=Role.STUDENT).select_related("user").first()
            if student is None:
                raise BackendError("The course has no students yet, so no namespace of it holds its LocalQueue.")
            namespace = namespace_for(course, student.user)
            local = self.api.get(kueue.LOCAL_QUEUE.item(namespace, course_settings(course).kueue_local_queue))
            name = (local.get("spec") or {}).get("clusterQueue", "")
        usage = kueue_status.QueueUsage.of(self.api.get(kueue.CLUSTER_QUEUE.item("", name)))
        return QueueSummary(
            name=usage.name,
            nominal_gpus=usage.nominal,
            used_gpus=usage.used,
            borrowed_gpus=usage.borrowed,
            pending=usage.pending,
            admitted=usage.admitted,
            cohort=usage.cohort,
            policy=kueue.preemption_in_words(usage.preemption, usage.cohort),
        )

    # -- cancel -----------------------------------------------------------------------------------------------
    def _owned(self, namespace: str, job: str) -> list[tuple[str, dict]]:
        found = []
        for kind in OWNED:
            if (
                (kind is MPIJOB and not cluster_settings(self.cluster).has_mpi_operator)
                or (kind is PYTORCHJOB and not self._has("training_operator"))
                or (kind is appwrapper.APPWRAPPER and not self._has("appwrapper"))
                or (kind is RAYJOB and not self._has("kuberay"))
            ):
                continue
            try:
                items = self.api.list(kind.collection(namespace), f"{LABEL_JOB}={job}")
            except NotFound:
                continue
            found += [(kind.item(namespace, name_of(i)), i) for i in items if labels(i).get(LABEL_JOB) == job]
        return found

    def cancel(self, scheduler_id: str) -> SchedulerStatus:
        namespace, job = split_id(scheduler_id)
        deadline = time.monotonic() + CANCEL_WAIT_SECONDS
        while True:
            remaining = self._owned(namespace, job)
            if not remaining:
                return SchedulerStatus(
                    scheduler_id,
                    JobState.CANCELLED,
                    "Deleted",
                    "All of its objects are deleted.",
                    finished_at=timezone.now(),
                )
            if time.monotonic() > deadline:
                raise ClusterUnreachable(
                    f"Kubernetes is still deleting {len(remaining)} object(s) of this job; the portal keeps checking."
                )
            for path, obj in remaining:
                if not (obj.get("metadata") or {}).get("deletionTimestamp"):
                    self.api.delete(path)
            time.sleep(0.5)

    # -- logs -------------------------------------------------------------------------------------------------
    def _pods(self, namespace: str, job: str) -> list[dict]:
        try:
            pods = self.api.list(POD.collection(namespace), f"{LABEL_JOB}={job}")
        except NotFound:
            return []
        pods = [p for p in pods if labels(p).get(LABEL_JOB) == job]
        return sorted(pods, key=lambda p: (bool(labels(p).get(LABEL_ROLE)), _ray_order(p), name_of(p)))

    @staticmethod
    def _containers(pod: dict) -> list[str]:
        spec = pod.get("spec") or {}
        names = [c.get("name") for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]]
        default = ((pod.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CONTAINER)
        return sorted(names, key=lambda n: n != default)

    def log_streams(self, scheduler_id: str) -> list[str]:
        namespace, job = split_id(scheduler_id)
        return [f"{name_of(pod)}/{c}" for pod in self._pods(namespace, job) for c in self._containers(pod)]

    def read_log(
        self, job_id: uuid.UUID, offset: int, limit: int, *, scheduler_id: str = "", stream: str = ""
    ) -> LogChunk:
        namespace, _ = split_id(scheduler_id)
        streams = self.log_streams(scheduler_id)
        if not streams:
            return LogChunk(offset=0, data="", eof=True, exists=False)
        if stream and stream not in streams:  # only this job's own pods, whatever the page asked for
            raise BackendError("That log does not belong to this job.")
        pod, container = (stream or streams[0]).split("/", 1)
        try:
            raw = self.api.text(
                f"{POD.item(namespace, pod)}/log", {"container": container, "limitBytes": str(offset + limit)}
            )
        except (NotFound, SubmitRejected):  # gone, or its container has not started yet
            return LogChunk(offset=offset, data="", eof=True, exists=False)
        if offset > len(raw):  # past the end (or a restarted container's shorter log): say where the end is
            return LogChunk(offset=len(raw), data="", eof=True)
        chunk = complete_utf8(raw[offset : offset + limit])
        next_offset = offset + len(chunk)
        return LogChunk(offset=next_offset, data=chunk.decode("utf-8", errors="replace"), eof=len(raw) < offset + limit)

    # -- services ---------------------------------------------------------------------------------------------
    def scale(self, scheduler_id: str, replicas: int) -> str:
        namespace, job = split_id(scheduler_id)
        deployment = self._workload(namespace, job, "Deployment")
        if deployment is None:
            raise NotSupported("Only servers (Deployments) can be scaled; this job has none running.")
        autoscalers = [h for h in self.api.list(HPA.collection(namespace), f"{LABEL_JOB}={job}")]
        if autoscalers and replicas < 1:
            raise NotSupported(
                "This server has an autoscaler, which keeps at least 1 replica. Cancel the job to stop it."
            )
        path = WORKLOADS["Deployment"].item(namespace, name_of(deployment))
        self.api.patch(f"{path}/scale", {"spec": {"replicas": replicas}})
        for hpa in autoscalers:
            top = max(replicas, (hpa.get("spec") or {}).get("maxReplicas", replicas))
            self.api.patch(HPA.item(namespace, name_of(hpa)), {"spec": {"minReplicas": replicas, "maxReplicas": top}})
        if autoscalers:
            return f"Scaled to {replicas} replica(s); the autoscaler may add more, up to {top}."
        return f"Scaled to {replicas} replica(s)."

    def proxy(self, scheduler_id: str, service: str, port: int, path: str, body: dict) -> Iterator[bytes]:
        namespace, job = split_id(scheduler_id)
        found = self.api.get(SERVICE.item(namespace, service))
        if labels(found).get(LABEL_JOB) != job:
            raise BackendError("That service does not belong to this job.")
        yield from self.api.stream(
            "POST", f"{SERVICE.item(namespace, f'{service}:{port}')}/proxy/{path.lstrip('/')}", body
        )

    def create_extra(self, scheduler_id: str, obj: dict) -> None:
        namespace, job = split_id(scheduler_id)
        if labels(obj).get(LABEL_JOB) != job or obj["metadata"].get("namespace") != namespace:
            raise BackendError("A helper object must carry its job's label and namespace.")
        self.api.create(kind_of(obj).collection(namespace), obj)

    def pods(self, scheduler_id: str, role: str) -> list[dict]:
        namespace, job = split_id(scheduler_id)
        return [p for p in self._pods(namespace, job) if labels(p).get(LABEL_ROLE, "") == role]

    # -- metrics ----------------------------------------------------------------------------------------------
    def task_usage(self, scheduler_ids: list[str]) -> list[TaskUsage]:
        """What `kubectl top pod` reads for the pods of these jobs' namespaces, one list call per namespace; a task
        is a pod, named "namespace/pod" as dcgm-exporter's labels name it."""
        metrics = KINDS[("metrics.k8s.io/v1beta1", "PodMetrics")]
        usage = []
        namespaces = {match["namespace"] for match in map(SCHEDULER_ID.match, scheduler_ids) if match}
        for namespace in sorted(namespaces):
            for item in self.api.list(metrics.collection(namespace), f"{MANAGED_BY_LABEL}={MANAGED_BY}"):
                containers = item.get("containers") or []
                usage.append(
                    TaskUsage(
                        task=f"{namespace}/{name_of(item)}",
                        job_id=labels(item).get(LABEL_JOB, ""),
                        cpu_millis=sum(cpu_millis((c.get("usage") or {}).get("cpu", "0")) for c in containers),
                        memory_bytes=sum(memory_bytes((c.get("usage") or {}).get("memory", "0")) for c in containers),
                    )
                )
        return usage

    def node_usage(self) -> list[NodeUsage]:
        metrics = KINDS[("metrics.k8s.io/v1beta1", "NodeMetrics")]
        return [
            NodeUsage(
                node=name_of(item),
                cpu_millis=cpu_millis((item.get("usage") or {}).get("cpu", "0")),
                memory_bytes=memory_bytes((item.get("usage") or {}).get("memory", "0")),
            )
            for item in self.api.list(metrics.collection())
        ]

    # -- admin ------------------------------------------------------------------------------------------------
    def test_connection(self) -> ConnectionReport:
        version = self.api.get("/version").get("gitVersion", "unknown")
        lines = [f"Kubernetes {version} at {self.api.client.configuration.host}."]
        missing = self._missing(NEEDED_ACCESS)
        addons = {fact: self._serves(kind) for fact, kind, _, _ in kueue.ADDONS}
        if addons["kueue"]:
            missing += self._missing(kueue.NEEDED_ACCESS)
        if addons["appwrapper"]:
            missing += self._missing(appwrapper.NEEDED_ACCESS)
        if addons["kuberay"]:
            missing += self._missing(kube_ray.NEEDED_ACCESS)
        lines += missing or ["The portal's identity may do everything it needs."]
        facts = {"server_version": version, "has_mpi_operator": self._serves(MPIJOB), "has_metrics_api": False}
        facts["has_metrics_api"] = self._serves(KINDS[("metrics.k8s.io/v1beta1", "PodMetrics")])
        facts["kube_addons"] = addons
        lines.append("MPI Operator (MPIJob): " + ("installed" if facts["has_mpi_operator"] else "not installed"))
        lines.append("Metrics API (kubectl top): " + ("available" if facts["has_metrics_api"] else "not available"))
        for fact, _, label, use in kueue.ADDONS:
            found = "installed" + (f": {use}" if use else "") if addons[fact] else "not installed"
            lines.append(f"{label}: {found}")
        return ConnectionReport(ok=not missing, lines=lines, facts=facts)

    def _missing(self, needed: list[tuple[str, str, str, str, str]]) -> list[str]:
        """SelfSubjectAccessReview for each need: a sentence for each the portal's identity may not do."""
        missing = []
        for verb, group, resource, sub, purpose in needed:
            review = {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {
                    "resourceAttributes": {"verb": verb, "group": group, "resource": resource, "subresource": sub}
                },
            }
            answer = self.api.create("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
            if not (answer.get("status") or {}).get("allowed"):
                what = f"{resource}/{sub}" if sub else resource
                missing.append(
                    f"Missing permission: {verb} {what}{'.' + group if group else ''} — needed to {purpose}."
                )
        return missing

    def _serves(self, kind) -> bool:
        try:
            resources = self.api.get(kind.base).get("resources") or []
        except (NotFound, SubmitRejected):
            return False
        return any(r.get("name") == kind.plural for r in resources)

    def stage_lab_files(self, source: Path) -> int:
        raise NotSupported(
            f"Jobs on {self.cluster.display_name} run container images; there are no lab files to stage."
        )
