"""1,000 active jobs on one cluster: the scheduler calls of a poll cycle, and how long a cycle takes, per cluster kind.

Submits 1,000 held jobs to the local SLURM (they stay PENDING; run it as root on the machine that runs it, as
`make test` does) and records them as portal jobs of one cluster per
kind measured, all on the same SLURM: the SSH kind (squeue over SSH) always, as the baseline, and with
`--kind slurm-rest` also slurmrestd (one GET …/jobs). Then it runs poll cycles on each and counts the scheduler calls
each cycle makes: SSH commands, or HTTP requests. For slurm-rest it measures cycles that fetch the whole job list
and cycles that send `update_time` (a 304 when no job of the cluster changed since the last list).
Every job is pending, so each cycle also reads why they wait (jobs/waiting.py) and stores 1,000 JobWait rows.
Target: one status call per cycle, plus one `squeue --start` and one `sprio` over SSH (none more over REST: the queue
comes from the same job list), whatever the number of jobs; cycle ≤ 1 s.

    .venv/bin/python bench/poll.py [--kind slurm|slurm-rest] [--jobs 1000] [--cycles 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, make_lab, percentile, setup_database


def submit_held(count: int) -> list[str]:
    """Held jobs of the slurm-rest kind's own lab user, whom other test runs on a shared machine never scancel."""
    print(f"submitting {count} held jobs to SLURM …", flush=True)
    started = time.monotonic()
    loop = (
        f"for i in $(seq {count}); do sbatch --parsable --hold --partition=debug --output=/dev/null "
        "--chdir=/tmp --wrap 'sleep 1' || exit 1; done"
    )
    user = os.environ["GPULAB_SLURMREST_USER"]
    result = subprocess.run(["runuser", "-u", user, "--", "bash", "-c", loop], capture_output=True, text=True)
    ids = result.stdout.split()
    assert len(ids) == count, result.stderr[-500:]
    print(f"  done in {time.monotonic() - started:.1f} s", flush=True)
    return ids


def cancel(ids: list[str]) -> None:
    """Only the benchmark's own jobs: the cluster is shared with whatever else runs as the lab user."""
    for start in range(0, len(ids), 200):
        subprocess.run(["scancel", *ids[start : start + 200]], capture_output=True, check=False)


def record_jobs(course, student, cluster, template, ids: list[str]) -> None:
    from core.choices import JobState
    from jobs.models import Job

    account = cluster.service_account()
    Job.objects.bulk_create(
        Job(
            owner=student,
            course=course,
            template=template,
            cluster=cluster,
            account=account,
            script="sleep 1",
            state=JobState.PENDING,
            scheduler_id=scheduler_id,
        )
        for scheduler_id in ids
    )


def rest_cluster(course):
    """The same SLURM through slurmrestd, with the SlurmUser's token from scripts/local_slurm.sh."""
    from clusters.backends import tokens
    from clusters.models import AuthMethod, Cluster, ClusterAccount

    cluster = Cluster.objects.create(
        name="local-rest", kind="slurm-rest", api_url=os.environ["GPULAB_SLURMREST_URL"], partitions=["debug"]
    )
    account = ClusterAccount(cluster=cluster, username=os.environ["GPULAB_SLURMREST_USER"], auth_method=AuthMethod.KEY)
    token = Path(os.environ["GPULAB_SLURMREST_TOKEN_FILE"]).read_text().strip()
    account.set_api_token(token, tokens.expires_at(token))
    account.save()
    course.clusters.add(cluster)
    return cluster


def measure(cluster, jobs: int, cycles: int, count_calls, before_cycle=lambda: None) -> dict:
    from jobs import polling
    from jobs.models import JobWait

    times, calls, spans = [], [], []
    for _ in range(cycles):
        before_cycle()
        start_calls = count_calls()
        t = time.monotonic()
        report = polling.poll_cluster(cluster.pk)
        times.append(time.monotonic() - t)
        calls.append(count_calls() - start_calls)
        spans.append((start_calls, count_calls()))
        assert report.polled == jobs and not report.error, report
    return {
        "spans": spans,
        "waits_stored": JobWait.objects.filter(job__cluster=cluster, position__isnull=False).count(),
        "scheduler_calls_per_cycle": sorted(set(calls)),
        "cycle_p50_s": round(percentile(times, 50), 3),
        "cycle_max_s": round(max(times), 3),
    }


def measure_ssh(cluster, jobs: int, cycles: int) -> dict:
    from clusters.backends import ssh

    commands: list[list[str]] = []
    real_run = ssh.run

    def counting_run(cluster_, account_, argv, **kwargs):
        commands.append(argv)
        return real_run(cluster_, account_, argv, **kwargs)

    ssh.run = counting_run
    try:
        figures = measure(cluster, jobs, cycles, lambda: len(commands))
    finally:
        ssh.run = real_run
    by_name = [Counter(_name(argv) for argv in commands[start:end]) for start, end in figures.pop("spans")]
    per_cycle = {name: sorted({cycle[name] for cycle in by_name}) for name in sorted(set().union(*by_name))}
    status = next(argv for argv in commands if _name(argv) in ("squeue", "sacct"))
    return {**figures, "call": " ".join(status)[:60] + " …", "calls_by_command": per_cycle}


def _name(argv: list[str]) -> str:
    return "squeue --start" if argv[:2] == ["squeue", "--start"] else argv[0]


def measure_rest(cluster, jobs: int, cycles: int) -> dict:
    from clusters.backends.kinds.slurm_rest import backend as rest_backend
    from clusters.backends.kinds.slurm_rest.client import sessions
    from clusters.kinds import get_backend

    get_backend(cluster).version()  # the OpenAPI document is read once per process (then every 10 min)
    statuses: list[int] = []
    listed: list[int] = []  # jobs in each full answer: slurmrestd lists every job the cluster still knows
    real_request = rest_backend.RestClient.request

    def noting_request(self, method, path, **kwargs):
        status, data = real_request(self, method, path, **kwargs)
        statuses.append(status)
        if status == 200:
            listed.append(len(data.get("jobs") or []))
        return status, data

    rest_backend.RestClient.request = noting_request
    try:
        full = measure(cluster, jobs, cycles, lambda: sessions.requests, before_cycle=rest_backend._job_lists.clear)
        statuses.clear()
        incremental = measure(cluster, jobs, cycles, lambda: sessions.requests)
    finally:
        rest_backend.RestClient.request = real_request
    full.pop("spans"), incremental.pop("spans")
    return {
        **full,
        "call": f"GET {get_backend(cluster).version().path('jobs')}",
        "jobs_in_answer": max(listed),
        "with_update_time": {**incremental, "answers_304": statuses.count(304), "answers_200": statuses.count(200)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=["slurm", "slurm-rest"], default="slurm-rest")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=10)
    args = parser.parse_args()

    teardown = setup_database()
    course, student, cluster, template = make_lab()
    ids: list[str] = []
    try:
        ids = submit_held(args.jobs)
        record_jobs(course, student, cluster, template, ids)
        results = {"slurm (SSH)": measure_ssh(cluster, args.jobs, args.cycles)}
        if args.kind == "slurm-rest":
            rest = rest_cluster(course)
            record_jobs(course, student, rest, template, ids)
            results["slurm-rest"] = measure_rest(rest, args.jobs, args.cycles)
        figures = {"active_jobs": args.jobs, "cycles": args.cycles, "kinds": results}
        print_side_by_side(figures)
        out = ROOT / "bench" / "results"
        out.mkdir(exist_ok=True)
        (out / "poll.json").write_text(json.dumps(figures, indent=2))
    finally:
        cancel(ids)
        teardown()


def print_side_by_side(figures: dict) -> None:
    kinds = figures["kinds"]
    rows = [("scheduler call", {k: v["call"] for k, v in kinds.items()})]
    rows.append(("calls per cycle", {k: v["scheduler_calls_per_cycle"] for k, v in kinds.items()}))
    for command in ("squeue --start", "sprio"):
        counts = {k: v.get("calls_by_command", {}).get(command, [0]) for k, v in kinds.items()}
        rows.append((f"  of them {command}", counts))
    rows.append(("waits stored", {k: v["waits_stored"] for k, v in kinds.items()}))
    rows.append(("cycle p50 (s)", {k: v["cycle_p50_s"] for k, v in kinds.items()}))
    rows.append(("cycle max (s)", {k: v["cycle_max_s"] for k, v in kinds.items()}))
    rows.append(("jobs in the answer", {k: v.get("jobs_in_answer", figures["active_jobs"]) for k, v in kinds.items()}))
    incremental = {k: v.get("with_update_time") for k, v in kinds.items()}
    if any(incremental.values()):
        rows.append(("update_time: calls", {k: v and v["scheduler_calls_per_cycle"] for k, v in incremental.items()}))
        rows.append(("update_time: p50 (s)", {k: v and v["cycle_p50_s"] for k, v in incremental.items()}))
        rows.append(("update_time: max (s)", {k: v and v["cycle_max_s"] for k, v in incremental.items()}))
        rows.append(
            (
                "update_time: 304/200",
                {k: v and f"{v['answers_304']}/{v['answers_200']}" for k, v in incremental.items()},
            )
        )
    print(f"\n{figures['active_jobs']} active jobs, {figures['cycles']} poll cycles per kind\n")
    print(f"{'':24}" + "".join(f"{name:>40}" for name in kinds))
    for label, values in rows:
        print(f"{label:24}" + "".join(f"{values[name] if values[name] is not None else '—'!s:>40}" for name in kinds))
    print()
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
