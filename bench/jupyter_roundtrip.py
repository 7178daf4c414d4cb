"""A JupyterLab kernel's `execute` round trip over its WebSocket: through the portal against the same server directly.

    .venv/bin/python bench/jupyter_roundtrip.py [--rounds 400]

The built-in JupyterLab template runs on the local SLURM (one job, no GPU, the lab's Python from
scripts/lab_venv.sh) as the student's own cluster user, and one kernel is started in it. The same kernel is then
driven two ways, in alternating blocks:
- portal: a websockets client logged in with a session cookie, on uvicorn (portal.asgi) -> the access check ->
  sessions/notebook_proxy.py (asgiproxy/aiohttp) -> the server, as JupyterLab's page does;
- direct: the same client straight to the node's port with the server's token, as the proxy itself connects.
Each sample is one execute_request (`pass`) sent -> the kernel's `status: idle` for it received. Prints p50/p95/max
per way and the portal/direct ratio at p50 and p95 (target <= 1.3). Uses its own database (test_<name>) and Redis
database BENCH_REDIS_DB (default 2).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cancel_all, percentile, session_cookie, setup_database, start_web, stop, wait_for

BLOCK = 50  # samples per block; the ways alternate block by block, so drift on the node hits both alike


def start_session():
    """The JupyterLab template launched as the portal does, submitted, running: (job, its server's address)."""
    from common import make_lab
    from django.utils import timezone

    from clusters.choices import RunAs
    from clusters.identity import set_cluster_username
    from core.choices import JobState
    from jobs.launch import launch
    from jobs.models import Job
    from jobs.submission import submit
    from sessions import notebook
    from tests.integration.notebooks import PREAMBLE, jupyter_template

    course, student, cluster, _ = make_lab()
    cluster.partitions, cluster.preamble = ["debug", "gpu"], PREAMBLE
    # The session runs as the student's own user (labalice, through the service account's sudo rule), as on a
    # cluster that keeps students apart; it also keeps it clear of clean-ups that cancel the service account's jobs.
    cluster.run_as = RunAs.SUDO
    cluster.save()
    set_cluster_username(student, os.environ.get("GPULAB_STUDENT_USERS", "labalice labbob").split()[0])
    template = jupyter_template(course)
    values = {"gpus_per_node": 0, "cpus_per_task": 2, "time_minutes": 15, "partition": "debug"}
    job = launch(student, course=course, template=template, cluster=cluster, raw_params=values)
    submit(job.pk)
    job.refresh_from_db()
    if not job.scheduler_id:
        raise SystemExit(f"the JupyterLab job was not submitted: {job.error}")
    squeue = ["squeue", "-h", "-j", job.scheduler_id, "-o", "%T"]
    state = lambda: subprocess.run(squeue, capture_output=True, text=True).stdout.strip()  # noqa: E731
    wait_for(lambda: state() == "RUNNING", 300, "the JupyterLab job to run (the cluster may be busy)")
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING, started_at=timezone.now())
    job.refresh_from_db()

    def found():
        try:
            return notebook.address(job)
        except Exception:  # starting: the file is not written yet
            return None

    wait_for(lambda: found() is not None, 120, "JupyterLab to write where it listens")
    return job, student, notebook.address(job)


def connect(url: str, headers: dict):
    from websockets.sync.client import connect as ws_connect

    return ws_connect(url, additional_headers=headers, open_timeout=30, max_size=2**24)


def round_trip(ws) -> float:
    from tests.integration.notebooks import execute_request

    msg_id, text = execute_request("pass")
    t0 = time.perf_counter()
    ws.send(text)
    while True:
        message = json.loads(ws.recv(timeout=30))
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if message["header"]["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=400, help="samples per way")
    args = parser.parse_args()

    teardown = setup_database()
    web = None
    try:
        import requests

        from sessions import notebook

        job, student, found = start_session()
        cookie = session_cookie(student)
        web, port = start_web("jupyter")

        auth = notebook.upstream_headers(found)  # the server's token, as the proxy sends it
        direct_base = f"{found.url}{notebook.prefix(job.pk)}"

        def answers() -> bool:  # the file is written just before the server listens
            try:
                return requests.get(direct_base + "api/status", headers=auth, timeout=5).ok
            except requests.RequestException:
                return False

        wait_for(answers, 120, "JupyterLab to answer")
        kernel = requests.post(direct_base + "api/kernels", json={"name": "python3"}, headers=auth, timeout=30)
        channels = f"api/kernels/{kernel.json()['id']}/channels"
        origin = f"http://127.0.0.1:{port}"
        portal_ws = connect(
            f"ws://127.0.0.1:{port}{notebook.prefix(job.pk)}{channels}",
            {"Cookie": f"sessionid={cookie}", "Origin": origin},
        )
        direct_ws = connect(direct_base.replace("http://", "ws://") + channels, auth)
        for ws in (portal_ws, direct_ws):  # warm up: the kernel's first replies are slower
            for _ in range(20):
                round_trip(ws)
        portal, direct = [], []
        while len(portal) < args.rounds:
            portal += [round_trip(portal_ws) for _ in range(BLOCK)]
            direct += [round_trip(direct_ws) for _ in range(BLOCK)]
        portal_ws.close()
        direct_ws.close()
    finally:
        if web is not None:
            stop(web)
        cancel_all()
        teardown()

    print(f"JupyterLab kernel execute round trip, {len(portal)} samples per way (job on the local SLURM, no GPU)")
    for label, samples in (("portal", portal), ("direct", direct)):
        ms = [s * 1000 for s in samples]
        print(f"  {label:6}  p50 {percentile(ms, 50):6.2f} ms  p95 {percentile(ms, 95):6.2f} ms  max {max(ms):6.2f} ms")
    p50 = percentile(portal, 50) / percentile(direct, 50)
    p95 = percentile(portal, 95) / percentile(direct, 95)
    print(f"  portal/direct: p50 {p50:.2f}x, p95 {p95:.2f}x (target <= 1.3x)")


if __name__ == "__main__":
    main()
