"""Lab sessions on Kubernetes with Kueue: while a session is on, the course's ClusterQueue holds its GPUs.

The portal keeps a ClusterQueue per course in the cluster's cohort (kueue.py). While a session is on, that queue's
nominalQuota of nvidia.com/gpu is the course's normal quota (its plan) plus the session's GPUs, and two annotations
say which session raised it and by how much; at the end (or on cancel) the queue goes back to its plan. Each write is
computed from the plan and the session, never added to what the queue holds now, so a retried or repeated call writes
the same thing and never raises twice. The annotations let a launch's queue update (backend.ensure_queue) keep the
raise, and let the portal tell a raise in place from one lost (an admin edited the queue or made it again), which it
puts back.

Where the GPUs come from: Kueue lends a cohort's unused quota between its ClusterQueues, so a session may take only
GPUs the cohort's other queues can lend (each one's nominal quota of the flavor without a session's raise, or its
lendingLimit where that is lower), less what other courses' sessions take at the same time. A session that does not
fit is refused with those figures. The objects follow Kueue v0.13's kueue.x-k8s.io/v1beta1 ClusterQueue
(spec.cohort; resourceGroups[].flavors[].resources[]: nominalQuota, borrowingLimit, lendingLimit) and are checked
against crds/kueue.yaml before they are sent.
"""

from __future__ import annotations

import contextlib
import copy

from django.utils import timezone

from ...lab_holds import Held, HoldRefused, HoldRequest, LabSessionHolds
from . import kueue
from .api import Conflict, NotFound
from .settings import cluster_settings, course_settings

SESSION = "gpulab.io/lab-session"  # the session whose GPUs the queue holds now
SESSION_GPUS = "gpulab.io/lab-session-gpus"  # how many of its GPUs are the session's


def whole(quantity) -> int:
    """A GPU quantity (an integer, or a quantity string without a suffix) as a count."""
    try:
        return max(int(float(str(quantity if quantity is not None else 0))), 0)
    except ValueError:
        return 0


def session_raise(cluster_queue: dict | None) -> tuple[str, int]:
    """The session that raised this queue and by how many GPUs, from its annotations; ("", 0) when none."""
    annotations = ((cluster_queue or {}).get("metadata") or {}).get("annotations") or {}
    return annotations.get(SESSION, ""), whole(annotations.get(SESSION_GPUS))


def gpu_quota(cluster_queue: dict, flavor: str = "") -> dict | None:
    """The queue's quota item for GPUs (of `flavor`, or of its first flavor that has one)."""
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for found in group.get("flavors") or []:
            if flavor and found.get("name") != flavor:
                continue
            for resource in found.get("resources") or []:
                if resource.get("name") == kueue.GPU:
                    return resource
    return None


def raised(planned: dict, session: str, gpus: int) -> dict:
    """The course's planned ClusterQueue with a session's GPUs on its nominal quota, annotated with the session."""
    obj = copy.deepcopy(planned)
    quota = gpu_quota(obj)
    if quota is not None:
        quota["nominalQuota"] = whole(quota["nominalQuota"]) + gpus
    obj["metadata"]["annotations"] = {SESSION: session, SESSION_GPUS: str(gpus)}
    return kueue.checked(obj)


def keep_raise(existing: dict | None, planned: dict) -> dict:
    """What a launch brings the course's queue to: its plan, with the raise of a session on now kept."""
    session, gpus = session_raise(existing)
    return raised(planned, session, gpus) if session and gpus else planned


def _nominal(cluster_queue: dict) -> int:
    return whole((gpu_quota(cluster_queue) or {}).get("nominalQuota"))


class KueueSessionHolds(LabSessionHolds):
    """A session on a cluster with Kueue: the course's ClusterQueue's GPU quota raised for the session's window."""

    applied_while_on = True
    admin_help = (
        "Instructors may book GPUs for a lab session: while it is on, the course's ClusterQueue gets the session's "
        "GPUs, lent by the other queues of the cluster's Kueue cohort. Needs Kueue and course queues the portal "
        "manages."
    )
    booking_note = (
        "During a session on {cluster} the course's Kueue queue gets the session's GPUs on top of its quota, lent by "
        "the other courses' queues in its cohort, from the session's start to its end: your students' jobs there use "
        "them without doing anything new."
    )
    teacher_note = (
        "The course's queue on {cluster} holds the session's GPUs on top of its quota: your students' jobs use "
        "them by themselves."
    )
    student_note = "The course's queue on {cluster} has the session's GPUs on top of its quota: launch as usual."

    def booking_problem(self, course) -> str:
        name = self.cluster.display_name
        if not kueue.uses_kueue(self.cluster):
            return (
                f"Lab sessions on “{name}” need Kueue, which Test connection has not found there. Ask an admin to run "
                "Test connection on it, or book on another cluster."
            )
        local_queue = course_settings(course).kueue_local_queue
        if local_queue:
            return (
                f"The course's jobs go to an admin's LocalQueue ({local_queue}), whose ClusterQueue the "
                "portal does not manage, so it cannot give the course a session's GPUs. Ask an admin to clear the "
                "course's “existing Kueue LocalQueue”, or to raise that queue's quota for the session by hand."
            )
        if not cluster_settings(self.cluster).kueue_cohort:
            return (
                f"“{name}” puts course queues in no Kueue cohort, so no other course's queue can lend a session its "
                "GPUs. Ask an admin to set the cluster's Kueue cohort."
            )
        return ""

    def _plan(self, request: HoldRequest) -> dict:
        problem = self.booking_problem(request.course)
        plan = kueue.plan_for(request.course, self.cluster)
        if problem or plan is None or plan.cluster_queue is None:
            raise HoldRefused(problem or "The course has no ClusterQueue the portal manages on this cluster.")
        return plan.cluster_queue

    def _get(self, name: str) -> dict | None:
        try:
            return self.backend.api.get(kueue.CLUSTER_QUEUE.item("", name))
        except NotFound:
            return None

    def hold(self, request: HoldRequest) -> Held:
        plan = self._plan(request)
        name, normal, until = plan["metadata"]["name"], _nominal(plan), _time(request.ends_at)
        if not request.on_now:
            self._check_room(name, request)
            cohort = cluster_settings(self.cluster).kueue_cohort
            return Held(
                gpus=0,
                words=f"Kueue's cohort {cohort} can lend the {request.gpus} GPU(s): the course's ClusterQueue {name} "
                f"gets them from {_time(request.starts_at)} to {until}.",
            )
        wanted = raised(plan, request.name, request.gpus)
        held = f"{normal + request.gpus} GPUs ({normal} of its own and the session's {request.gpus}) until {until}"
        existing = self._get(name)
        if existing is not None and self._in_place(existing, wanted, request):
            if existing.get("spec") != wanted["spec"]:
                self._write(existing, wanted)  # the course's plan moved (a student enrolled); the raise stays
            return Held(gpus=request.gpus, words=f"The course's ClusterQueue {name} holds {held}.", changed=False)
        lost = request.held_before > 0  # raised before: an admin edited the queue or made it again since
        if not lost:
            self._check_room(name, request)
        self._write(existing, wanted)
        if lost:
            words = (
                f"The course's ClusterQueue {name} had lost the session's GPUs (edited or made again); put back: it "
                f"holds {held}."
            )
        else:
            words = f"The course's ClusterQueue {name} now holds {held}."
        return Held(gpus=request.gpus, words=words)

    @staticmethod
    def _in_place(existing: dict, wanted: dict, request: HoldRequest) -> bool:
        """The queue carries this session's raise: its annotations name it, and its GPUs are the plan's and the
        session's."""
        return session_raise(existing) == (request.name, request.gpus) and _nominal(existing) == _nominal(wanted)

    def release(self, request: HoldRequest) -> str:
        plan = kueue.plan_for(request.course, self.cluster)
        name = kueue.cluster_queue_name(request.course)
        existing = self._get(name)
        session, gpus = session_raise(existing)
        if existing is None or session != request.name:
            return ""  # never raised, already restored, or raised since by the course's next session
        if plan is not None and plan.cluster_queue is not None:
            restored = copy.deepcopy(plan.cluster_queue)
        else:  # the course no longer lets the portal manage its queue: only the session's GPUs come off
            restored = copy.deepcopy(existing)
            quota = gpu_quota(restored)
            if quota is not None:
                quota["nominalQuota"] = max(whole(quota["nominalQuota"]) - gpus, 0)
        restored["metadata"]["annotations"] = {SESSION: None, SESSION_GPUS: None}
        self._write(existing, restored)
        return f"The course's ClusterQueue {name} is back to its own {_nominal(restored)} GPUs."

    def _write(self, existing: dict | None, wanted: dict) -> None:
        """Create the queue as wanted, or merge-patch it there (a key the plan leaves out is removed when told)."""
        name = wanted["metadata"]["name"]
        if existing is None:
            with contextlib.suppress(Conflict):  # a launch made it just now: patched below
                self.backend.api.create(kueue.CLUSTER_QUEUE.collection(), wanted)
                return
            existing = self.backend.api.get(kueue.CLUSTER_QUEUE.item("", name))
        spec = existing.get("spec") or {}
        dropped = {k: None for k in kueue.OPTIONAL_SPEC if k in spec and k not in wanted["spec"]}
        metadata = {key: wanted["metadata"][key] for key in ("labels", "annotations") if key in wanted["metadata"]}
        self.backend.api.patch(
            kueue.CLUSTER_QUEUE.item("", name), {"metadata": metadata, "spec": {**dropped, **wanted["spec"]}}
        )

    def _check_room(self, name: str, request: HoldRequest) -> None:
        """Refuse a session the cohort's other queues cannot lend, saying what they can."""
        shared = cluster_settings(self.cluster)
        cohort, flavor = shared.kueue_cohort, shared.kueue_flavor or "default-flavor"
        lenders = {}
        for queue in self.backend.api.list(kueue.CLUSTER_QUEUE.collection()):
            queue_name = (queue.get("metadata") or {}).get("name", "")
            quota = gpu_quota(queue, flavor)
            if queue_name == name or (queue.get("spec") or {}).get("cohort") != cohort or quota is None:
                continue
            own = max(whole(quota.get("nominalQuota")) - session_raise(queue)[1], 0)
            lenders[queue_name] = min(own, whole(quota["lendingLimit"])) if "lendingLimit" in quota else own
        lendable = sum(lenders.values())
        free = lendable - request.others_gpus
        if request.gpus <= free:
            return
        if not lendable:
            raise HoldRefused(
                f"No other course's queue in Kueue's cohort {cohort} has GPUs of flavor {flavor} to lend, so the "
                "cohort has none to give the session. Ask an admin to give another course's queue a GPU quota in "
                "the cohort, or book on another cluster."
            )
        taken = f"; other courses' sessions take {request.others_gpus} of them then" if request.others_gpus else ""
        advice = f"Book at most {free}, or another time." if free > 0 else "Book another time."
        raise HoldRefused(
            f"Kueue's cohort {cohort} can lend a session at most {lendable} GPU(s) of flavor {flavor} (what "
            f"{', '.join(sorted(lenders))} may lend){taken}; the session asks for {request.gpus}. {advice}"
        )


def _time(moment) -> str:
    return timezone.localtime(moment).strftime("%a %d %b %H:%M")
