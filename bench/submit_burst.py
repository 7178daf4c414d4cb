"""200 launches through the API within 10 s against the local SLURM.

Prints p50/p95 launch→scheduler-id latency, submissions per second, SSH connections opened and duplicates.
Target: all 200 get an id, p95 ≤ 2 s, ≤ 4 SSH connections per cluster, 0 duplicates.

With --kill-worker the worker is SIGKILLed halfway through the burst and a new one started; it prints the
seconds until no job is left queued or submitting (target ≤ 15 s from the new worker's start) and duplicates.

    .venv/bin/python bench/submit_burst.py [--launches 200] [--seconds 10] [--workers 4] [--kill-worker]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    ROOT,
    cancel_all,
    make_lab,
    percentile,
    setup_database,
    slurm_comments,
    start,
    stop,
    summary,
    wait_for,
)

PORT = 8765
WAITING = ("queued", "submitting")  # not yet on the scheduler


def accepted_logins(log: Path, user: str) -> int:
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text(errors="replace").splitlines() if f"Accepted publickey for {user} " in line)


def post_job(token: str) -> tuple[int, str, float]:
    body = json.dumps({"template": "sleep", "cluster": "local", "params": {"seconds": 1}}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{PORT}/api/v1/jobs/",
        data=body,
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())["id"], time.monotonic() - started
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()[:200], time.monotonic() - started


def start_worker(workers: int, log: Path, level: str) -> subprocess.Popen:
    celery = str(ROOT / ".venv" / "bin" / "celery")
    argv = [celery, "-A", "portal", "worker", "-B", f"--concurrency={workers}", f"--loglevel={level}"]
    argv += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    return start(argv, log, POLL_INTERVAL_SECONDS="2")


def fire(token: str, launches: int, seconds: float, at_half=None) -> list[tuple[int, str, float]]:
    """`launches` API posts spread over `seconds`; `at_half()` runs once half of them are out."""
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=16) as pool:
        futures = []
        for i in range(launches):
            delay = t0 + i * seconds / launches - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(post_job, token))
            if at_half and i == launches // 2:
                at_half()
        return [f.result() for f in futures]


def duplicates_on_slurm(jobs) -> int:
    comments = Counter(slurm_comments())
    with_id = [j for j in jobs if j.scheduler_id]
    found = sum(max(0, comments[f"gpulab:{j.pk}"] - 1) for j in jobs)
    return found + len(with_id) - len({j.scheduler_id for j in with_id})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=4, help="Celery worker processes")
    parser.add_argument(
        "--kill-worker",
        action="store_true",
        help="SIGKILL the worker halfway through the burst, start a new one, print the time to recovery",
    )
    args = parser.parse_args()

    teardown = setup_database()
    from rest_framework.authtoken.models import Token

    _course, student, _cluster, _template = make_lab()
    token = Token.objects.create(user=student).key
    logs = ROOT / "var" / "bench"
    logs.mkdir(parents=True, exist_ok=True)
    cancel_all()
    venv = ROOT / ".venv" / "bin"
    uvicorn = [str(venv / "uvicorn"), "portal.asgi:application", "--host", "127.0.0.1", "--port", str(PORT)]
    web = start([*uvicorn, "--workers", "2"], logs / "web.log")
    # INFO logs the worker's "ready." line the recovery run times; the plain burst keeps its quieter worker.
    workers = [start_worker(args.workers, logs / "worker.log", "INFO" if args.kill_worker else "WARNING")]
    try:
        wait_for(lambda: _up(), 60, "the web server")
        time.sleep(3)  # the worker's processes start
        if args.kill_worker:
            kill_run(args, token, logs, workers)
        else:
            burst_run(args, token, logs)
    finally:
        for worker in workers:
            stop(worker)
        stop(web)
        cancel_all()
        teardown()


def burst_run(args, token: str, logs: Path) -> None:
    from jobs.models import Job

    sshd_log = Path(os.environ["GPULAB_SLURM_LOG_DIR"]) / "sshd.log"
    user = os.environ["GPULAB_SERVICE_USER"]
    logins_before = accepted_logins(sshd_log, user)
    print(f"firing {args.launches} launches over {args.seconds:.0f} s …", flush=True)
    t0 = time.monotonic()
    results = fire(token, args.launches, args.seconds)
    fired = time.monotonic() - t0
    created = [r[1] for r in results if r[0] == 201]
    refused = [r for r in results if r[0] != 201]

    def all_have_ids() -> bool:
        return Job.objects.filter(pk__in=created).exclude(scheduler_id="").count() == len(created)

    try:
        wait_for(all_have_ids, 180, "every job to get a scheduler id")
    except SystemExit as exc:
        print(exc)
    jobs = list(Job.objects.filter(pk__in=created))
    with_id = [j for j in jobs if j.scheduler_id]
    latencies = [(j.submitted_at - j.created_at).total_seconds() for j in with_id]
    span = (max(j.submitted_at for j in with_id) - min(j.created_at for j in with_id)).total_seconds()
    figures = {
        "launches": args.launches,
        "accepted_201": len(created),
        "refused": len(refused),
        "fired_in_s": round(fired, 2),
        "got_scheduler_id": len(with_id),
        "latency_p50_s": round(percentile(latencies, 50), 3),
        "latency_p95_s": round(percentile(latencies, 95), 3),
        "latency_max_s": round(max(latencies), 3),
        "submissions_per_s": round(len(with_id) / span, 1) if span else None,
        "api_p95_s": round(percentile([r[2] for r in results], 95), 3),
        "ssh_connections_opened": accepted_logins(sshd_log, user) - logins_before,
        "duplicates": duplicates_on_slurm(jobs),
        "celery_workers": args.workers,
    }
    print(f"launch → scheduler id: {summary(latencies)}")
    report(figures, "submit_burst.json")
    if refused:
        print("first refusal:", refused[0])


def kill_run(args, token: str, logs: Path, workers: list[subprocess.Popen]) -> None:
    """Recovery from a worker killed mid-burst: seconds from the new worker's start until the jobs the dead worker
    left queued or submitting are on the scheduler, and until no job of the whole burst waits. The
    stale-submission sweep (SUBMIT_STALE_AFTER_SECONDS, 120 s) is not what ends it."""
    from jobs.models import Job

    moments = {}

    def kill_and_restart() -> None:
        deadline = time.monotonic() + 3  # land the kill while a submission is in flight
        while time.monotonic() < deadline and not Job.objects.filter(state="submitting").exists():
            time.sleep(0.01)
        os.killpg(workers[0].pid, signal.SIGKILL)
        moments["killed"] = time.monotonic()
        moments["orphans"] = list(Job.objects.filter(state__in=WAITING).values_list("pk", flat=True))
        workers.append(start_worker(args.workers, logs / "worker-2.log", "INFO"))
        moments["restarted"] = time.monotonic()

    print(f"firing {args.launches} launches over {args.seconds:.0f} s, killing the worker halfway …", flush=True)
    results = fire(token, args.launches, args.seconds, at_half=kill_and_restart)
    created = [r[1] for r in results if r[0] == 201]
    wait_for(lambda: _ready(logs / "worker-2.log"), 60, "the new Celery worker")
    ready = orphans_done = time.monotonic()
    try:
        wait_for(lambda: not Job.objects.filter(pk__in=moments["orphans"], state__in=WAITING).exists(), 300, "orphans")
        orphans_done = time.monotonic()
        wait_for(lambda: not Job.objects.filter(pk__in=created, state__in=WAITING).exists(), 300, "recovery")
    except SystemExit as exc:
        print(exc)
    done = time.monotonic()
    jobs = list(Job.objects.filter(pk__in=created))
    figures = {
        "launches": args.launches,
        "accepted_201": len(created),
        "waiting_when_killed": len(moments["orphans"]),
        "those_resumed_from_new_worker_start_s": round(orphans_done - moments["restarted"], 2)
        if moments["orphans"]
        else None,
        "recovery_from_new_worker_start_s": round(done - moments["restarted"], 2),
        "recovery_from_new_worker_ready_s": round(max(0.0, done - ready), 2),
        "recovery_from_kill_s": round(done - moments["killed"], 2),
        "still_waiting": sum(j.state in WAITING for j in jobs),
        "got_scheduler_id": sum(bool(j.scheduler_id) for j in jobs),
        "submit_failed": sum(j.state == "submit_failed" for j in jobs),
        "duplicates": duplicates_on_slurm(jobs),
        "celery_workers": args.workers,
    }
    report(figures, "submit_burst_kill_worker.json")


def report(figures: dict, name: str) -> None:
    print(json.dumps(figures, indent=2))
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / name).write_text(json.dumps(figures, indent=2))


def _ready(log: Path) -> bool:
    return log.exists() and " ready." in log.read_text(errors="replace")


def _up() -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/login/", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


if __name__ == "__main__":
    main()
