"""1,000 active jobs on one cluster: one scheduler call per poll cycle, and how long a cycle takes.

Submits 1,000 held jobs to the local SLURM (they stay PENDING), records them as portal jobs, then runs
poll cycles and counts the commands each cycle sends over SSH. Target: 1 scheduler call, cycle ≤ 1 s.

    .venv/bin/python bench/poll.py [--jobs 1000] [--cycles 10]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, cancel_all, make_lab, percentile, setup_database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=10)
    args = parser.parse_args()

    teardown = setup_database()
    from clusters.backends import ssh
    from jobs import polling
    from jobs.models import Job
    from jobs.states import JobState

    course, student, cluster, template = make_lab()
    account = cluster.service_account()
    cancel_all()
    try:
        print(f"submitting {args.jobs} held jobs to SLURM …", flush=True)
        started = time.monotonic()
        loop = (
            f"for i in $(seq {args.jobs}); do sbatch --parsable --hold --partition=debug --output=/dev/null "
            "--wrap 'sleep 1' || exit 1; done"
        )
        result = ssh.run(cluster, account, ["bash", "-c", loop], timeout=600)
        ids = result.stdout.split()
        assert len(ids) == args.jobs, result.stderr[-500:]
        print(f"  done in {time.monotonic() - started:.1f} s", flush=True)
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

        calls: list[list[str]] = []
        real_run = ssh.run

        def counting_run(cluster_, account_, argv, **kwargs):
            calls.append(argv)
            return real_run(cluster_, account_, argv, **kwargs)

        ssh.run = counting_run
        cycle_times, calls_per_cycle = [], []
        for _ in range(args.cycles):
            calls.clear()
            t = time.monotonic()
            report = polling.poll_cluster(cluster.pk)
            cycle_times.append(time.monotonic() - t)
            calls_per_cycle.append(len(calls))
            assert report.polled == args.jobs and not report.error, report
        ssh.run = real_run
        figures = {
            "active_jobs": args.jobs,
            "cycles": args.cycles,
            "scheduler_calls_per_cycle": sorted(set(calls_per_cycle)),
            "command": shlex.join(calls[0])[:120] + " …",
            "cycle_p50_s": round(percentile(cycle_times, 50), 3),
            "cycle_max_s": round(max(cycle_times), 3),
        }
        print(json.dumps(figures, indent=2))
        out = ROOT / "bench" / "results"
        out.mkdir(exist_ok=True)
        (out / "poll.json").write_text(json.dumps(figures, indent=2))
    finally:
        cancel_all()
        teardown()


if __name__ == "__main__":
    main()
