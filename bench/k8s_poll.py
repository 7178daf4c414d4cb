"""500 active Kubernetes jobs across 5 namespaces: one pod list per namespace per poll cycle, and cycle time.

Starts kmock's emulated API server over TLS on 127.0.0.1 (tests/k8s_emulator.py), creates the namespaces and
one running pod per job as the kubelet would, records the portal's jobs, then runs poll cycles through the
real backend and counts the API calls each cycle makes. Target: calls per cycle = namespaces.

    .venv/bin/python bench/k8s_poll.py [--jobs 500] [--namespaces 5] [--cycles 10]
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
    parser.add_argument("--cycles", type=int, default=10)
    args = parser.parse_args()

    teardown = setup_database()
    from clusters.models import AuthMethod, Cluster, ClusterAccount
    from core.choices import JobState
    from jobs import polling
    from jobs.models import Job
    from tests.integration.k8s import Emulator

    course, student, _, template = make_lab()
    emulator = Emulator(Path(tempfile.mkdtemp(prefix="gpulab-k8s-bench-")), mpi=False)
    try:
        cluster = Cluster.objects.create(name="bench-k8s", kind="kubernetes")
        account = ClusterAccount(cluster=cluster, username="portal", auth_method=AuthMethod.KUBECONFIG)
        account.set_secret(emulator.kubeconfig("bench-token"))
        account.save()
        namespaces = [f"gpulab-bench-{i}" for i in range(args.namespaces)]
        for name in namespaces:
            emulator.call(
                "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )
        print(f"creating {args.jobs} running pods in {args.namespaces} namespaces …", flush=True)
        started, jobs = time.monotonic(), []
        for i in range(args.jobs):
            job_id, namespace = uuid.uuid4(), namespaces[i % args.namespaces]
            labels = {
                "app.kubernetes.io/managed-by": "gpulab-portal",
                "gpulab.io/job": str(job_id),
                "gpulab.io/workload": "Deployment",
            }
            workload = {
                "metadata": {"namespace": namespace},
                "spec": {
                    "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "s", "image": "i"}]}}
                },
            }
            emulator.start_pod(workload, f"pod-{i}", phase="Running", ready=True)
            jobs.append(
                Job(
                    id=job_id,
                    owner=student,
                    course=course,
                    template=template,
                    cluster=cluster,
                    account=account,
                    script="",
                    state=JobState.RUNNING,
                    scheduler_id=f"{namespace}/{job_id}",
                )
            )
        Job.objects.bulk_create(jobs)
        print(f"  done in {time.monotonic() - started:.1f} s", flush=True)

        cycle_times, calls_per_cycle, kinds = [], [], Counter()
        for _ in range(args.cycles):
            emulator.clear_requests()
            t = time.monotonic()
            report = polling.poll_cluster(cluster.pk)
            cycle_times.append(time.monotonic() - t)
            calls = emulator.requests()
            calls_per_cycle.append(len(calls))
            kinds.update(call.split("?")[0].rsplit("/", 1)[-1] for call in calls)
            assert report.polled == args.jobs and not report.error, report
        assert Job.objects.filter(cluster=cluster, state=JobState.RUNNING).count() == args.jobs
        # The API side alone (the emulator answering, the client parsing), without the database writes.
        from clusters.kinds import get_backend

        ids, api_times = [job.scheduler_id for job in jobs], []
        for _ in range(args.cycles):
            t = time.monotonic()
            get_backend(cluster).poll(ids)
            api_times.append(time.monotonic() - t)
        figures = {
            "active_jobs": args.jobs,
            "namespaces": args.namespaces,
            "cycles": args.cycles,
            "api_calls_per_cycle": sorted(set(calls_per_cycle)),
            "calls_by_resource": dict(kinds),
            "cycle_p50_s": round(percentile(cycle_times, 50), 3),
            "cycle_max_s": round(max(cycle_times), 3),
            "api_part_p50_s": round(percentile(api_times, 50), 3),
        }
        print(json.dumps(figures, indent=2))
        out = ROOT / "bench" / "results"
        out.mkdir(exist_ok=True)
        (out / "k8s_poll.json").write_text(json.dumps(figures, indent=2))
    finally:
        emulator.stop()
        teardown()


if __name__ == "__main__":
    main()
