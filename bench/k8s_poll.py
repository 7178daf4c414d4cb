"""500 active Kubernetes jobs across 5 namespaces: one pod list per namespace per poll cycle, and cycle time.

Starts kmock's emulated API server over TLS on 127.0.0.1 (tests/k8s_emulator.py), creates the namespaces and
one running pod per job as the kubelet would, records the portal's jobs, then runs poll cycles through the
real backend and counts the API calls each cycle makes, by verb and resource, at the emulator.

With --kueue the same run then measures a cluster with Kueue: --kueue-jobs workloads in --queues LocalQueues (one
namespace and one ClusterQueue each). The even queues' jobs are all admitted and running; the odd queues' are half
running, half waiting in the order Kueue's visibility API reports. Only what the poll reads is seeded: the pods and
the Workloads (no Jobs: the poll lists none while pods or a Workload tell a job's state).

Design, checked every cycle (the run exits 1 otherwise): one pod list per namespace; with Kueue also one Workload
list per namespace, one ClusterQueue list, and one visibility call (pendingworkloads) per LocalQueue with waiting
work; none per job.

    .venv/bin/python bench/k8s_poll.py [--jobs 500] [--namespaces 5] [--cycles 20] [--kueue [--kueue-jobs 500
    --queues 10]]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, make_lab, percentile, setup_database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--namespaces", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--kueue", action="store_true", help="measure a cluster with Kueue too, in the same run")
    parser.add_argument("--kueue-jobs", type=int, default=500)
    parser.add_argument("--queues", type=int, default=10)
    args = parser.parse_args()

    teardown = setup_database()
    from tests.integration.k8s import Emulator

    course, student, _, template = make_lab()
    emulator = Emulator(Path(tempfile.mkdtemp(prefix="gpulab-k8s-bench-")), mpi=False, kueue=args.kueue)
    lab = (course, student, template)
    try:
        figures = {"plain": measure(emulator, lab, args.jobs, args.namespaces, args.cycles, kueue=False)}
        if args.kueue:
            figures["kueue"] = measure(emulator, lab, args.kueue_jobs, args.queues, args.cycles, kueue=True)
        print(json.dumps(figures, indent=2))
        out = ROOT / "bench" / "results"
        out.mkdir(exist_ok=True)
        (out / ("k8s_poll_kueue.json" if args.kueue else "k8s_poll.json")).write_text(json.dumps(figures, indent=2))
    finally:
        emulator.stop()
        teardown()
    off = [f"{case}: {figure['off_design']}" for case, figure in figures.items() if figure["off_design"]]
    if off:
        sys.exit("API calls per cycle are not as designed:\n" + "\n".join(off))


def measure(emulator, lab, count: int, spaces: int, cycles: int, *, kueue: bool) -> dict:
    from clusters.kinds import get_backend
    from core.choices import JobState
    from jobs import polling
    from jobs.models import Job, JobWait

    cluster = make_cluster(emulator, "kueue" if kueue else "bench", kueue)
    started = time.monotonic()
    jobs, waiting_queues = seed(emulator, lab, cluster, count, spaces, kueue)
    seed_s = time.monotonic() - started
    print(f"  seeded in {seed_s:.1f} s", flush=True)
    design = Counter({"list pods": spaces})
    if kueue:
        design.update({"list workloads": spaces, "list clusterqueues": 1})
        design["get localqueues/pendingworkloads"] = waiting_queues

    cycle_times, totals, off = [], [], []
    seen: Counter[str] = Counter()
    for cycle in range(cycles):
        emulator.clear_requests()
        t = time.monotonic()
        report = polling.poll_cluster(cluster.pk)
        cycle_times.append(time.monotonic() - t)
        calls = Counter(map(call_kind, emulator.requests()))
        totals.append(calls.total())
        seen.update(calls)
        if calls != design:
            off.append(f"cycle {cycle + 1}: {dict(calls)}, designed {dict(design)}")
        assert report.polled == count and not report.error, report
    running = sum(job.state == JobState.RUNNING for job in jobs)
    assert Job.objects.filter(cluster=cluster, state=JobState.RUNNING).count() == running
    if kueue:  # every waiting job got its place from its queue's one visibility call
        placed = JobWait.objects.filter(job__cluster=cluster, position__isnull=False).count()
        if placed != count - running:
            off.append(f"{placed} of {count - running} waiting jobs have their place in the queue")
    # The API side alone (the emulator answering, the client parsing), without the database writes.
    ids, api_times = [job.scheduler_id for job in jobs], []
    for _ in range(cycles):
        t = time.monotonic()
        backend = get_backend(cluster)
        backend.poll(ids)
        backend.queue()
        api_times.append(time.monotonic() - t)
    return {
        "active_jobs": count,
        "running": running,
        "namespaces": spaces,
        "queues_with_waiting_work": waiting_queues,
        "seed_s": round(seed_s, 1),
        "cycles": cycles,
        "api_calls_per_cycle": sorted(set(totals)),
        "calls_per_cycle_by_verb_and_resource": {kind: n / cycles for kind, n in sorted(seen.items())},
        "designed": dict(sorted(design.items())),
        "off_design": off[:3],
        "cycle_p50_s": round(percentile(cycle_times, 50), 3),
        "cycle_p95_s": round(percentile(cycle_times, 95), 3),
        "cycle_max_s": round(max(cycle_times), 3),
        "api_part_p50_s": round(percentile(api_times, 50), 3),
    }


def call_kind(line: str) -> str:
    """ "GET /api/v1/namespaces/ns/pods?labelSelector=…" as "list pods": the verb and resource RBAC would name."""
    from tests.k8s_emulator import PATH, VERBS

    method, _, target = line.partition(" ")
    match = PATH.match(target.split("?", 1)[0])
    if match is None:
        return line
    resource = match["plural"] + (f"/{match['sub']}" if match["sub"] and match["sub"] != "status" else "")
    verb = "list" if method == "GET" and match["name"] is None else VERBS.get(method, method)
    return f"{verb} {resource}"


def make_cluster(emulator, prefix: str, kueue: bool):
    from clusters.models import AuthMethod, Cluster, ClusterAccount

    cluster = Cluster.objects.create(
        name=f"{prefix}-k8s", kind="kubernetes", kind_settings={"kube_addons": {"kueue": kueue}}
    )
    account = ClusterAccount(cluster=cluster, username="portal", auth_method=AuthMethod.KUBECONFIG)
    account.set_secret(emulator.kubeconfig("bench-token"))
    account.save()
    return cluster


def seed(emulator, lab, cluster, count: int, spaces: int, kueue: bool) -> tuple[list, int]:
    """The namespaces, pods and Workloads the poll reads, and the portal's jobs; also how many queues have waiting
    work. Namespace i holds LocalQueue i, which feeds ClusterQueue i (each named after the namespace)."""
    from core.choices import JobState
    from jobs.models import Job

    course, student, template = lab
    account = cluster.accounts.get()
    prefix = "kueue" if kueue else "bench"
    namespaces = [f"gpulab-{prefix}-{i}" for i in range(spaces)]
    for name in namespaces:
        emulator.call(
            "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
    print(f"creating {count} {'workloads' if kueue else 'running pods'} in {spaces} namespaces …", flush=True)
    jobs, waiting = [], {name: list[dict]() for name in namespaces}
    for i in range(count):
        job_id, queue = uuid.uuid4(), i % spaces
        namespace = namespaces[queue]
        admitted = not kueue or queue % 2 == 0 or (i // spaces) % 2 == 0
        if kueue:
            waiting_item = make_workload(emulator, namespace, job_id, admitted)
            if waiting_item:
                waiting[namespace].append(waiting_item)
        if admitted:
            make_pod(emulator, namespace, job_id, f"pod-{i}", "Job" if kueue else "Deployment")
        jobs.append(
            Job(
                id=job_id,
                owner=student,
                course=course,
                template=template,
                cluster=cluster,
                account=account,
                script="",
                state=JobState.RUNNING if admitted else JobState.PENDING,
                scheduler_id=f"{namespace}/{job_id}",
            )
        )
    if kueue:
        for namespace, items in waiting.items():
            make_cluster_queue(emulator, namespace, pending=len(items))
            emulator.pend(namespace, items)
    Job.objects.bulk_create(jobs)
    return jobs, sum(bool(items) for items in waiting.values())


def make_pod(emulator, namespace: str, job_id: uuid.UUID, name: str, workload: str) -> None:
    labels = {
        "app.kubernetes.io/managed-by": "gpulab-portal",
        "gpulab.io/job": str(job_id),
        "gpulab.io/workload": workload,
    }
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "s", "image": "i"}]}}
    emulator.start_pod(
        {"metadata": {"namespace": namespace}, "spec": {"template": template}}, name, phase="Running", ready=True
    )


def make_workload(emulator, namespace: str, job_id: uuid.UUID, admitted: bool) -> dict | None:
    """The Workload Kueue makes for the job's Job, admitted or waiting; the visibility API's entry when waiting."""
    name = f"job-gpulab-{str(job_id)[:8]}-{str(job_id)[-5:]}"
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": f"gpulab-{str(job_id)[:8]}", "uid": str(job_id)}
    pod_set = {"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "s", "image": "i"}]}}}
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": [owner]},
        "spec": {"queueName": namespace, "podSets": [pod_set]},
    }
    emulator.call("POST", f"/apis/kueue.x-k8s.io/v1beta1/namespaces/{namespace}/workloads", workload)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    reserved = ("True", "QuotaReserved", f"Quota reserved in ClusterQueue {namespace}")
    if not admitted:
        reserved = (
            "False",
            "Pending",
            "couldn't assign flavors to pod set main: insufficient unused quota for "
            "nvidia.com/gpu in flavor default-flavor, 1 more needed",
        )
    conditions = [
        {
            "type": "QuotaReserved",
            "status": reserved[0],
            "reason": reserved[1],
            "message": reserved[2],
            "lastTransitionTime": at,
        }
    ]
    if admitted:
        conditions.append(
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "message": "The workload is admitted",
                "lastTransitionTime": at,
            }
        )
    emulator.set_status(
        f"/apis/kueue.x-k8s.io/v1beta1/namespaces/{namespace}/workloads/{name}", {"conditions": conditions}
    )
    return None if admitted else {"namespace": namespace, "name": name, "localQueueName": namespace}


def make_cluster_queue(emulator, name: str, pending: int) -> None:
    quota = {
        "coveredResources": ["nvidia.com/gpu"],
        "flavors": [{"name": "default-flavor", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}],
    }
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {"resourceGroups": [quota]},
    }
    emulator.call("POST", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues", queue)
    usage = [{"name": "default-flavor", "resources": [{"name": "nvidia.com/gpu", "total": 8, "borrowed": 0}]}]
    emulator.set_status(
        f"/apis/kueue.x-k8s.io/v1beta1/clusterqueues/{name}", {"flavorsUsage": usage, "pendingWorkloads": pending}
    )


if __name__ == "__main__":
    main()
