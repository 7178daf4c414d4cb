"""KubeRay's RayJob (ray.io/v1, KubeRay v1.4.2's API types): a job's state from the RayJob's status, and where the
portal reaches its Ray dashboard.

State. KubeRay reports two things (RayJobStatus): `jobDeploymentStatus`, where the RayJob stands with its Ray cluster
("" new, Initializing: KubeRay makes the RayCluster and waits for it to be ready; Running: the cluster is up and the
entrypoint submitted; Complete, Failed; Suspending and Suspended, where Kueue holds it; Retrying, a new cluster after
a failure; Waiting, InteractiveMode), and `jobStatus`, what Ray says of the entrypoint (PENDING, RUNNING, STOPPED,
SUCCEEDED, FAILED), with `reason` (SubmissionFailed, DeadlineExceeded, AppFailed,
JobDeploymentStatusTransitionGracePeriodExceeded) and `message` on a failure. The pods (head, workers, submitter)
carry the job's labels, so a starting cluster's pending pods say why it waits; where it has none, the RayCluster's
ReplicaFailure condition says why KubeRay could not make them (a quota, a refused pod). A RayJob that fails before its
Ray cluster came up (no dashboard address yet) ends the job as failed with KubeRay's message; one that reached its
time limit while running, as timed out.

Dashboard. The Ray dashboard is the head's service on port 8265, which KubeRay names <RayCluster>-head-svc. The portal
reaches it as it reaches JupyterLab: through the API server's service proxy (notebook.dashboard_route), and only at
the head service of the RayCluster this job's RayJob reports, named as KubeRay names it and carrying KubeRay's labels
for that cluster's head. The manifest check refuses templates that would publish it elsewhere (an Ingress, a NodePort or
LoadBalancer, a head service of their own naming).
"""

from __future__ import annotations

import re

from core.choices import JobState

from ...base import SchedulerStatus
from .api import KINDS
from .status import parse_time, pending_reason, phase, started_at

RAYJOB = KINDS[("ray.io/v1", "RayJob")]
RAYCLUSTER = KINDS[("ray.io/v1", "RayCluster")]
DASHBOARD_PORT = 8265
HEAD_SERVICE = "{cluster}-head-svc"  # utils.GenerateHeadServiceName for a RayCluster without a headService of its own
CLUSTER_LABEL, NODE_TYPE_LABEL = "ray.io/cluster", "ray.io/node-type"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
EXIT_CODE = re.compile(r"exit code (-?\d+)")

# What the portal's account must be allowed where Test connection finds KubeRay, and what it cannot do without each.
NEEDED_ACCESS = [
    ("create", "ray.io", "rayjobs", "", "start RayJob templates"),
    ("list", "ray.io", "rayjobs", "", "follow RayJobs"),
    ("delete", "ray.io", "rayjobs", "", "cancel RayJobs"),
    ("list", "ray.io", "rayclusters", "", "say why a RayJob's Ray cluster does not come up"),
    ("get", "", "services", "", "open the Ray dashboard"),
]

WAITING_WORDS = {
    "": "Waiting for KubeRay to take up the RayJob",
    "Suspended": "Suspended: KubeRay makes its Ray cluster when it is let go (Kueue admits it)",
    "Suspending": "Being suspended: KubeRay is removing its Ray cluster",
    "Waiting": "The Ray cluster is up; waiting for a Ray job to be submitted to it",
}
FAILED_WORDS = {
    "SubmissionFailed": "the Ray job could not be submitted to its Ray cluster",
    "AppFailed": "the Ray job failed",
    "JobDeploymentStatusTransitionGracePeriodExceeded": "the Ray job failed, and KubeRay did not see it end in time",
}


def _status(rayjob: dict) -> dict:
    return rayjob.get("status") or {}


def came_up(rayjob: dict) -> bool:
    """Whether the RayJob's Ray cluster was ever ready: KubeRay sets the dashboard's address once it is."""
    return bool(_status(rayjob).get("dashboardURL"))


def needs_cluster(rayjob: dict, pods: list[dict]) -> bool:
    """Whether the RayCluster itself must say why the job waits or failed: its cluster is starting (or never came up)
    and no pod of it says why."""
    deployment = _status(rayjob).get("jobDeploymentStatus", "")
    starting = deployment == "Initializing" and not any(phase(p) in {"Pending", "Unknown"} for p in pods)
    return bool(_status(rayjob).get("rayClusterName")) and (
        starting or (deployment == "Failed" and not came_up(rayjob))
    )


def cluster_words(raycluster: dict | None) -> str:
    """Why KubeRay cannot make the cluster's pods, from its ReplicaFailure condition (FailedCreateHeadPod, …)."""
    status = (raycluster or {}).get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "ReplicaFailure" and condition.get("status") == "True":
            return f"KubeRay cannot create its pods ({condition.get('reason', '')}: {condition.get('message', '')})"
    return f"KubeRay reports {status['reason']}" if status.get("reason") else ""


def _first_line(message: str) -> str:
    return (message or "").strip().splitlines()[0][:300] if (message or "").strip() else ""


def status_of(scheduler_id: str, rayjob: dict, pods: list[dict], raycluster: dict | None = None) -> SchedulerStatus:
    """The portal's state of a RayJob, with KubeRay's reason in words."""
    status = _status(rayjob)
    deployment = status.get("jobDeploymentStatus", "")
    ray_job = status.get("jobStatus", "")
    cluster = status.get("rayClusterName", "")
    begun = started_at(pods) or parse_time(status.get("startTime"))
    if deployment in WAITING_WORDS:
        return SchedulerStatus(scheduler_id, JobState.PENDING, deployment or "New", WAITING_WORDS[deployment])
    if deployment == "Retrying":
        failed = int(status.get("failed") or 0)
        limit = int((rayjob.get("spec") or {}).get("backoffLimit") or 0) + 1
        words = f"KubeRay retries it on a new Ray cluster (attempt {failed + 1} of {limit})"
        return SchedulerStatus(scheduler_id, JobState.PENDING, "Retrying", words)
    if deployment == "Initializing":
        return SchedulerStatus(scheduler_id, JobState.PENDING, "Initializing", _starting_words(pods, raycluster))
    if deployment == "Running":
        return SchedulerStatus(
            scheduler_id, JobState.RUNNING, "Running", _running_words(ray_job, cluster), started_at=begun
        )
    ended = parse_time(status.get("endTime"))
    if deployment == "Complete" and ray_job == "SUCCEEDED":
        return SchedulerStatus(scheduler_id, JobState.COMPLETED, "Complete", "The Ray job succeeded", 0, begun, ended)
    if deployment == "Complete" and ray_job == "STOPPED":
        words = "The Ray job was stopped on its Ray cluster (ray job stop), not from this portal"
        return SchedulerStatus(scheduler_id, JobState.CANCELLED, "Stopped", words, None, begun, ended, ending=words)
    if deployment in {"Complete", "Failed", "ValidationFailed"}:
        return _failed(scheduler_id, rayjob, pods, raycluster, begun, ended)
    return SchedulerStatus(scheduler_id, JobState.PENDING, deployment[:32], f"KubeRay reports {deployment}")


def _starting_words(pods: list[dict], raycluster: dict | None) -> str:
    waiting = [p for p in pods if phase(p) in {"Pending", "Unknown"}]
    if waiting:
        return f"Starting the Ray cluster: {_role(waiting[0])}: {pending_reason(waiting[0])}"
    if pods:
        return f"Starting the Ray cluster: {len(pods)} pod(s) started, waiting for the head to be ready"
    return f"Starting the Ray cluster: {cluster_words(raycluster) or 'KubeRay is creating its pods'}"


def _role(pod: dict) -> str:
    """Which of the RayJob's pods this is, as KubeRay labels them: the head, a worker of a group, or the submitter."""
    pod_labels = (pod.get("metadata") or {}).get("labels") or {}
    node_type = pod_labels.get(NODE_TYPE_LABEL, "")
    if node_type == "worker":
        return f"worker ({pod_labels.get('ray.io/group', '?')})"
    return node_type or "submitter"


def _running_words(ray_job: str, cluster: str) -> str:
    if ray_job == "RUNNING":
        return f"The Ray job runs on Ray cluster {cluster}"
    if ray_job in {"SUCCEEDED", "FAILED", "STOPPED"}:
        return f"The Ray job ended ({ray_job}); KubeRay is finishing up"
    return f"Ray cluster {cluster} is up; the Ray job waits to start ({ray_job or 'not submitted yet'})"


def _failed(
    scheduler_id: str, rayjob: dict, pods: list[dict], raycluster: dict | None, begun, ended
) -> SchedulerStatus:
    status = _status(rayjob)
    reason = status.get("reason") or status.get("jobDeploymentStatus") or "Failed"
    message = _first_line(status.get("message", ""))
    kuberay = f" (KubeRay: {message})" if message else ""
    state = JobState.FAILED
    if not came_up(rayjob):  # failed at deployment: the Ray cluster never came up, the entrypoint never ran
        why = cluster_words(raycluster)
        words = "The Ray cluster never came up" + (f": {why}" if why else "")
        if reason == "DeadlineExceeded":
            words += "; KubeRay stopped it at the job's time limit"
        elif reason != "Failed":
            words += f"; KubeRay gave up ({reason})"
        return SchedulerStatus(
            scheduler_id, state, reason[:32], words[:255], None, begun, ended, ending=f"{words}.{kuberay}"
        )
    if reason == "DeadlineExceeded":
        state, words = JobState.TIMED_OUT, "The Ray job ran past the job's time limit; KubeRay stopped it"
    else:
        said = FAILED_WORDS.get(reason, f"KubeRay reports {reason}")
        words = said[0].upper() + said[1:]
        if message:
            words += f": {message}"
    code = EXIT_CODE.search(status.get("message", "") or "")
    ending = f"{words.split(': ')[0]}.{kuberay} The log shows why." if state == JobState.FAILED else ""
    return SchedulerStatus(
        scheduler_id,
        state,
        reason[:32],
        words[:255],
        int(code[1]) if code else None,
        begun,
        ended,
        ending=ending,
    )
