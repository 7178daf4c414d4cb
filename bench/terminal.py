"""Keystroke -> echo in a shell inside a running SLURM job: through the portal against direct `ssh -t … srun --pty`.

    .venv/bin/python bench/terminal.py [--keys 300]

One job (`sleep`, 1 core) is submitted with sbatch as the service account and left running; both ways open
`srun --jobid=<id> --overlap --pty bash -l` in it as that account and start `cat > /dev/null`, so every key is
echoed by the PTY's line discipline on the compute node, nothing else answers:
- portal: an asyncio WebSocket client (websockets, logged in with a session cookie) on uvicorn (portal.asgi), which
  relays to the SSH channel (sessions/terminal.py -> clusters/backends/terminal.py), as xterm.js does;
- direct: OpenSSH's `ssh -tt` to the login node, driven through a local PTY, as a student's terminal would.
Each key is sent once the previous one's echo has arrived; the time from send to echo is one sample. Prints
p50/p95/max per way and the portal/direct ratio at p50 and p95 (target <= 1.5). Uses its own database
(test_<name>) and Redis database BENCH_REDIS_DB (default 2).
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, percentile, setup_database, start, stop, wait_for

KEYS = "abcdefghijklmnopqrstuvwxyz"
READY = "bench-ready-42"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def submit_job(cluster, account) -> str:
    from clusters.backends import ssh

    result = ssh.run(cluster, account, ["sbatch", "--parsable", "-p", "debug", "-t", "10", "--wrap", "sleep 590"])
    job_id = result.stdout.strip().split(";")[0]
    if not result.ok or not job_id.isdigit():
        raise SystemExit(f"sbatch refused the benchmark's job: {result.message()}")
    state = lambda: subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True).stdout  # noqa: E731
    wait_for(lambda: state().strip() == "RUNNING", 300, "the job to run (the cluster may be busy)")
    return job_id


def measure(send, read_until, keys: int) -> list[float]:
    """Send `keys` keys one at a time; each sample is send -> its echo. A newline every 40 keys (not timed)."""
    send("cat > /dev/null\n")
    time.sleep(1.0)
    read_until(lambda out: True, timeout=0.5)
    samples = []
    for i in range(keys):
        key = KEYS[i % len(KEYS)]
        t0 = time.perf_counter()
        send(key)
        read_until(lambda out, key=key: key in out)
        samples.append(time.perf_counter() - t0)
        if i % 40 == 39:
            send("\n")
            read_until(lambda out: "\n" in out)
    send("\x04")  # end cat
    return samples


class PortalTerminal:
    """The browser's side of the socket, on an asyncio client (no reader thread between the socket and the test)."""

    def __init__(self, url: str, cookie: str, origin: str):
        import asyncio

        from websockets.asyncio.client import connect

        self.loop = asyncio.new_event_loop()
        headers = {"Cookie": f"sessionid={cookie}", "Origin": origin}
        self.ws = self.loop.run_until_complete(connect(url, additional_headers=headers))

    def send(self, text: str) -> None:
        self.loop.run_until_complete(self.ws.send(json.dumps({"input": text})))

    def read_until(self, predicate, timeout: float = 30) -> str:
        return self.loop.run_until_complete(self._read_until(predicate, timeout))

    async def _read_until(self, predicate, timeout: float) -> str:
        import asyncio

        out = ""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                frame = await asyncio.wait_for(self.ws.recv(), max(0.01, deadline - time.monotonic()))
            except TimeoutError:
                break
            if isinstance(frame, bytes):
                out += frame.decode(errors="replace")
            elif "closed" in json.loads(frame):
                raise SystemExit(f"the portal closed the terminal: {frame}")
            if predicate(out):
                return out
        return out

    def close(self) -> None:
        self.loop.run_until_complete(self.ws.close())
        self.loop.close()


class DirectTerminal:
    def __init__(self, argv: list[str]):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execvp(argv[0], argv)  # noqa: S606 (OpenSSH's client, with the argument list built above)

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def read_until(self, predicate, timeout: float = 30) -> str:
        out = ""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            out += os.read(self.fd, 65536).decode(errors="replace")
            if predicate(out):
                return out
        return out

    def close(self) -> None:
        os.close(self.fd)
        os.waitpid(self.pid, 0)


def through_portal(student, job, keys: int, log_name: str, prompt: str = "") -> tuple[subprocess.Popen, list[float]]:
    """Start uvicorn, open the job's terminal socket as `student` and time `keys` keys; returns (web, samples)."""
    from django.test import Client

    client = Client()
    client.force_login(student)
    cookie = client.cookies["sessionid"].value
    port = free_port()
    log = Path(tempfile.gettempdir()) / log_name
    argv = [str(ROOT / ".venv/bin/uvicorn"), "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    web = start(argv, log)
    wait_for(lambda: "Application startup complete" in log.read_text(), 60, "uvicorn to start")
    origin = f"http://127.0.0.1:{port}"
    portal = PortalTerminal(f"ws://127.0.0.1:{port}/ws/jobs/{job.pk}/terminal/?cols=120&rows=40", cookie, origin)
    if prompt:
        portal.read_until(lambda out: prompt in out)
    portal.send(f"echo {READY}\n")
    portal.read_until(lambda out: READY in out.split("echo", 1)[-1])
    samples = measure(portal.send, portal.read_until, keys)
    portal.close()
    return web, samples


def report(where: str, keys: int, portal_samples: list[float], direct_samples: list[float]) -> None:
    print(f"keystroke -> echo, {keys} keys each, {where} (`cat > /dev/null` under a PTY)")
    print(f"{'':8} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, samples in (("portal", portal_samples), ("direct", direct_samples)):
        p50, p95 = percentile(samples, 50) * 1000, percentile(samples, 95) * 1000
        print(f"{name:8} {p50:8.2f} {p95:8.2f} {max(samples) * 1000:8.2f}")
    ratio50 = percentile(portal_samples, 50) / percentile(direct_samples, 50)
    ratio95 = percentile(portal_samples, 95) / percentile(direct_samples, 95)
    print(f"portal/direct: p50 {ratio50:.2f}x, p95 {ratio95:.2f}x (target <= 1.5x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=300)
    args = parser.parse_args()

    teardown = setup_database()
    web, job_id = None, ""
    try:
        from common import make_lab

        from core.choices import JobState
        from jobs.models import Job

        course, student, cluster, template = make_lab()
        account = cluster.service_account()
        job_id = submit_job(cluster, account)
        job = Job.objects.create(
            owner=student, course=course, template=template, cluster=cluster, account=account,
            script="sleep 590", state=JobState.RUNNING, scheduler_id=job_id,
        )  # fmt: skip
        web, portal_samples = through_portal(student, job, args.keys, "bench-terminal-web.log", prompt="$")

        with tempfile.TemporaryDirectory() as tmp:
            key = Path(tmp) / "key"
            key.write_text(Path(os.environ["GPULAB_SERVICE_KEY"]).read_text())
            key.chmod(0o600)
            known = Path(tmp) / "known_hosts"
            known.write_text(f"[{cluster.host}]:{cluster.port} {cluster.host_key}\n")
            ssh_argv = ["ssh", "-tt", "-i", str(key), "-p", str(cluster.port), "-o", f"UserKnownHostsFile={known}"]
            ssh_argv += [
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                "IdentitiesOnly=yes",
                f"{account.username}@{cluster.host}",
            ]
            ssh_argv += ["srun", f"--jobid={job_id}", "--overlap", "--pty", "bash", "-l"]
            direct = DirectTerminal(ssh_argv)
            direct.read_until(lambda out: "$" in out)
            direct.send(f"echo {READY}\n")
            direct.read_until(lambda out: READY in out.split("echo", 1)[-1])
            direct_samples = measure(direct.send, direct.read_until, args.keys)
            direct.send("exit\n")
            direct.close()

        report(f"inside SLURM job {job_id}", args.keys, portal_samples, direct_samples)
    finally:
        if job_id:
            subprocess.run(["scancel", job_id], capture_output=True, check=False)
        if web is not None:
            stop(web)
        teardown()


if __name__ == "__main__":
    main()
