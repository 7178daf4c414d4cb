"""200 launches through the API within 10 s against the local SLURM.

Prints p50/p95 launch→scheduler-id latency, submissions per second, SSH connections opened and duplicates.
Target: all 200 get an id, p95 ≤ 2 s, ≤ 4 SSH connections per cluster, 0 duplicates.

    .venv/bin/python bench/submit_burst.py [--launches 200] [--seconds 10] [--workers 4]
"""

from __future__ import annotations

import argparse
import json
import os
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=4, help="Celery worker processes")
    args = parser.parse_args()

    teardown = setup_database()
    from rest_framework.authtoken.models import Token

    from jobs.models import Job

    _course, student, _cluster, _template = make_lab()
    token = Token.objects.create(user=student).key
    logs = ROOT / "var" / "bench"
    logs.mkdir(parents=True, exist_ok=True)
    sshd_log = Path(os.environ["GPULAB_SLURM_LOG_DIR"]) / "sshd.log"
    user = os.environ["GPULAB_SERVICE_USER"]
    cancel_all()
    logins_before = accepted_logins(sshd_log, user)
    venv = ROOT / ".venv" / "bin"
    web = start(
        [
            str(venv / "uvicorn"),
            "portal.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(PORT),
            "--workers",
            "2",
        ],
        logs / "web.log",
    )
    worker = start(
        [
            str(venv / "celery"),
            "-A",
            "portal",
            "worker",
            "-B",
            f"--concurrency={args.workers}",
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        logs / "worker.log",
        POLL_INTERVAL_SECONDS="2",
    )
    try:
        wait_for(lambda: _up(), 60, "the web server")
        time.sleep(3)  # the worker's processes start
        print(f"firing {args.launches} launches over {args.seconds:.0f} s …", flush=True)
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=16) as pool:
            futures = []
            for i in range(args.launches):
                delay = t0 + i * args.seconds / args.launches - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                futures.append(pool.submit(post_job, token))
            results = [f.result() for f in futures]
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
        comments = Counter(slurm_comments())
        duplicates = sum(max(0, comments[f"gpulab:{j.pk}"] - 1) for j in jobs)
        duplicates += len(with_id) - len({j.scheduler_id for j in with_id})
        logins = accepted_logins(sshd_log, user) - logins_before
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
            "ssh_connections_opened": logins,
            "duplicates": duplicates,
            "celery_workers": args.workers,
        }
        print(f"launch → scheduler id: {summary(latencies)}")
        print(json.dumps(figures, indent=2))
        out = ROOT / "bench" / "results"
        out.mkdir(exist_ok=True)
        (out / "submit_burst.json").write_text(json.dumps(figures, indent=2))
        if refused:
            print("first refusal:", refused[0])
    finally:
        stop(worker)
        stop(web)
        cancel_all()
        teardown()


def _up() -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/login/", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


if __name__ == "__main__":
    main()
