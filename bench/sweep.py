"""A sweep of 100 runs on the local SLURM, over SSH: the scheduler calls its submission makes, and the poll cycle with
the array on the cluster (still one status call per cycle, whatever the number of tasks).

The sweep is launched through the portal's own service (sweeps/launch.py: the checks, the plan, 100 Job rows) and
submitted by its submit task's code (sweeps/submission.py) in this process, with every SSH command counted. Its runs
sleep long enough that the cycles see the array running K at a time and the rest pending; the array is cancelled at
the end (only the benchmark's own). Run it as root on the machine `make test` sets up.

    .venv/bin/python bench/sweep.py [--runs 100] [--at-once 4] [--cycles 10]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, make_lab, percentile, setup_database


def counted_ssh():
    """Every SSH command the portal runs from here on (as its service account, or as the student through the sudo
    rule), and every SFTP session it opens, as argv lists."""
    from clusters.backends import as_student, ssh

    commands: list[list[str]] = []
    real_run, real_sftp = ssh.run, ssh.sftp

    def counting_run(cluster, account, argv, **kwargs):
        commands.append(argv)
        return real_run(cluster, account, argv, **kwargs)

    @contextlib.contextmanager
    def counting_sftp(*args, **kwargs):
        commands.append(["(SFTP session)"])
        with real_sftp(*args, **kwargs) as channel:
            yield channel

    ssh.run = as_student.run = counting_run
    ssh.sftp = counting_sftp
    return commands


def _name(argv: list[str]) -> str:
    if argv[:2] == ["sudo", "-n"]:  # sudo -n -u <student> -- command …
        return f"{_name(argv[argv.index('--') + 1 :])} (as the student)"
    return "squeue --start" if argv[:2] == ["squeue", "--start"] else argv[0]


def launch(course, student, cluster, template, runs: int, at_once: int):
    from sweeps.launch import launch_sweep

    template.parameters = [
        *[p for p in template.parameters if p["name"] != "seconds"],
        {"name": "seconds", "type": "int", "default": 1, "min": 0, "max": 600, "sweep": True},
    ]
    template.save()
    started = time.monotonic()
    sweep = launch_sweep(
        student,
        course=course,
        template=template,
        cluster=cluster,
        raw_params={"partition": "debug", "time_minutes": 5},
        swept={"seconds": [200 + i for i in range(runs)]},
        mode="grid",
        at_once=at_once,
    )
    return sweep, time.monotonic() - started


def submit(sweep, commands: list) -> dict:
    from sweeps import submission
    from sweeps.models import Sweep

    before = len(commands)
    started = time.monotonic()
    outcome = submission.submit(sweep.pk)
    took = time.monotonic() - started
    sweep = Sweep.objects.get(pk=sweep.pk)
    assert outcome.value == "submitted", (outcome, sweep.error)
    return {
        "sweep": sweep,
        "outcome": outcome.value,
        "calls": Counter(_name(argv) for argv in commands[before:]),
        "seconds": took,
    }


def poll_cycles(sweep, commands: list, cycles: int) -> dict:
    from jobs import polling
    from jobs.models import Job

    times, calls, states = [], [], Counter()
    for _ in range(cycles):
        before = len(commands)
        started = time.monotonic()
        report = polling.poll_cluster(sweep.cluster_id)
        times.append(time.monotonic() - started)
        calls.append(Counter(_name(argv) for argv in commands[before:]))
        assert not report.error, report
        time.sleep(1)
    states.update(Job.objects.filter(sweep_run__sweep=sweep).values_list("state", flat=True))
    by_name = {name: sorted({cycle[name] for cycle in calls}) for name in sorted(set().union(*calls))}
    return {
        "calls_by_command": by_name,
        "cycle_p50_s": round(percentile(times, 50), 3),
        "cycle_max_s": round(max(times), 3),
        "runs_by_state": dict(states),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--at-once", type=int, default=4)
    parser.add_argument("--cycles", type=int, default=10)
    args = parser.parse_args()

    teardown = setup_database()
    course, student, cluster, template = make_lab()
    commands = counted_ssh()
    array = ""
    try:
        sweep, launch_s = launch(course, student, cluster, template, args.runs, args.at_once)
        submitted = submit(sweep, commands)
        array = submitted["sweep"].scheduler_id
        listed = subprocess.run(
            ["squeue", "-r", "--noheader", f"--jobs={array}", "--format=%i"], capture_output=True, text=True
        ).stdout.split()
        polled = poll_cycles(submitted["sweep"], commands, args.cycles)
        figures = {
            "runs": args.runs,
            "at_once": args.at_once,
            "launch_s": round(launch_s, 3),
            "submit": {
                "scheduler_calls": dict(submitted["calls"]),
                "seconds": round(submitted["seconds"], 3),
                "array": array,
                "tasks_on_slurm": len(listed),
            },
            "poll": polled,
        }
        print(json.dumps(figures, indent=2))
        out = ROOT / "bench" / "results"
        out.mkdir(exist_ok=True)
        (out / "sweep.json").write_text(json.dumps(figures, indent=2))
    finally:
        if array:
            subprocess.run(["scancel", array], capture_output=True, check=False)
        teardown()


if __name__ == "__main__":
    main()
