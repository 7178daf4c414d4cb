"""Keystroke -> echo in a shell inside a running SLURM job: through the portal against direct `ssh -t … srun --pty`.

    .venv/bin/python bench/terminal.py [--keys 300]

One job (`sleep`, 1 core) is submitted with sbatch as the service account and left running; both ways open
`srun --jobid=<id> --overlap --pty bash -l` in it as that account and start `cat > /dev/null`, so every key is
echoed by the PTY's line discipline on the compute node, nothing else answers:
- portal: a WebSocket client (logged in with a session cookie) on uvicorn (portal.asgi), which
  relays to the SSH channel (sessions/terminal.py -> clusters/backends/terminal.py), as xterm.js does;
- direct: OpenSSH's `ssh -tt` to the login node, driven through a local PTY, as a student's terminal would.
Both clients do the same work per key (write, select, read): the portal's is websockets' sans-I/O protocol on a plain
socket, not an event loop. Each key is sent once the previous one's echo has arrived; the time from send to echo is
one sample. The two ways take turns key by key (who goes first alternates), so both see the same load on a shared
machine; the first WARMUP keys of each are not counted. Prints the load average, p50/p95/max per way and the
portal/direct ratio at p50 and p95 (target <= 1.5). Uses its own database (test_<name>) and Redis database
BENCH_REDIS_DB (default 2); uvicorn runs as `make demo` runs it (scripts/demo.sh: uvloop, httptools,
websockets-sansio).
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
WARMUP = 20  # keys per way not counted: the first ones pay for cold caches and paths


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


def measure(ways: dict, keys: int) -> dict[str, list[float]]:
    """Time `keys` keys per way, the ways taking turns key by key; `ways` maps a name to (send, read_until). Each
    sample is send -> its echo. A newline every 40 keys (not timed) keeps cat's line short."""
    for send, _ in ways.values():
        send("cat > /dev/null\n")
    time.sleep(1.0)
    for _, read_until in ways.values():
        read_until(lambda out: True, timeout=0.5)
    samples: dict[str, list[float]] = {name: [] for name in ways}
    order = list(ways)
    for i in range(WARMUP + keys):
        key = KEYS[i % len(KEYS)]
        for name in order if i % 2 else reversed(order):
            send, read_until = ways[name]
            t0 = time.perf_counter()
            send(key)
            read_until(lambda out, key=key: key in out)
            samples[name].append(time.perf_counter() - t0)
            if i % 40 == 39:
                send("\n")
                read_until(lambda out: "\n" in out)
    for send, _ in ways.values():
        send("\x04")  # end cat
    return {name: taken[WARMUP:] for name, taken in samples.items()}


class PortalTerminal:
    """The browser's side of the socket: websockets' sans-I/O protocol on a plain socket, read with select() in this
    thread, so the client does what DirectTerminal does with its PTY (write, select, read) and adds no event loop."""

    def __init__(self, url: str, cookie: str, origin: str):
        from websockets.client import ClientProtocol
        from websockets.protocol import State
        from websockets.uri import parse_uri

        uri = parse_uri(url)
        self.sock = socket.create_connection((uri.host, uri.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as browsers do for WebSockets
        self.protocol = ClientProtocol(uri, origin=origin)
        request = self.protocol.connect()
        request.headers["Cookie"] = f"sessionid={cookie}"
        self.protocol.send_request(request)
        self._flush()
        deadline = time.monotonic() + 30
        while self.protocol.state is State.CONNECTING and time.monotonic() < deadline:
            self._receive(deadline)
        if self.protocol.state is not State.OPEN:
            raise SystemExit(f"the portal refused the terminal's socket: {self.protocol.handshake_exc}")

    def _flush(self) -> None:
        self.sock.sendall(b"".join(self.protocol.data_to_send()))

    def _receive(self, deadline: float) -> list:
        ready, _, _ = select.select([self.sock], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return []
        data = self.sock.recv(65536)
        if data:
            self.protocol.receive_data(data)
        else:
            self.protocol.receive_eof()
        self._flush()  # pongs and close frames the protocol owes the server
        return self.protocol.events_received()

    def send(self, text: str) -> None:
        self.protocol.send_binary(text.encode())  # keys go as binary frames, as static/js/terminal.js sends them
        self._flush()

    def read_until(self, predicate, timeout: float = 30) -> str:
        from websockets.frames import Opcode

        out = ""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for frame in self._receive(deadline):
                if frame.opcode is Opcode.BINARY:
                    out += frame.data.decode(errors="replace")
                elif frame.opcode is Opcode.TEXT and "closed" in json.loads(frame.data):
                    raise SystemExit(f"the portal closed the terminal: {frame.data.decode()}")
                elif frame.opcode is Opcode.CLOSE:
                    raise SystemExit("the portal closed the terminal's socket")
            if predicate(out):
                return out
        return out

    def close(self) -> None:
        self.protocol.send_close()
        self._flush()
        self.sock.close()


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
            try:
                out += os.read(self.fd, 65536).decode(errors="replace")
            except OSError:  # the PTY's other end closed: ssh ended (srun refused, or the job was cancelled)
                raise SystemExit(f"the direct ssh ended; it said: {out[-500:]!r}") from None
            if predicate(out):
                return out
        return out

    def close(self) -> None:
        os.close(self.fd)
        os.waitpid(self.pid, 0)


def open_portal(student, job, log_name: str, prompt: str = "") -> tuple[subprocess.Popen, PortalTerminal]:
    """Start uvicorn as `make demo` does and open the job's terminal socket as `student`, at its prompt."""
    from django.test import Client

    client = Client()
    client.force_login(student)
    cookie = client.cookies["sessionid"].value
    port = free_port()
    log = Path(tempfile.gettempdir()) / log_name
    argv = [str(ROOT / ".venv/bin/uvicorn"), "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    web = start([*argv, "--ws", "websockets-sansio"], log)
    wait_for(lambda: "Uvicorn running on" in log.read_text(), 60, "uvicorn to start")
    origin = f"http://127.0.0.1:{port}"
    portal = PortalTerminal(f"ws://127.0.0.1:{port}/ws/jobs/{job.pk}/terminal/?cols=120&rows=40", cookie, origin)
    if prompt:
        portal.read_until(lambda out: prompt in out)
    ready(portal)
    return web, portal


def open_echo() -> tuple[subprocess.Popen, PortalTerminal]:
    """The relay with nothing behind it: bench/ws_echo.py on uvicorn, run as the portal is, sends each key back."""
    port = free_port()
    log = Path(tempfile.gettempdir()) / "bench-ws-echo.log"
    argv = [str(ROOT / ".venv/bin/uvicorn"), "ws_echo:app", "--app-dir", str(ROOT / "bench"), "--lifespan", "off"]
    echo = start([*argv, "--host", "127.0.0.1", "--port", str(port), "--ws", "websockets-sansio"], log)
    wait_for(lambda: "Uvicorn running" in log.read_text(), 60, "uvicorn (the echo) to start")
    return echo, PortalTerminal(f"ws://127.0.0.1:{port}/", "", f"http://127.0.0.1:{port}")


def ready(terminal) -> None:
    """The shell answers: what it printed before is read and dropped."""
    terminal.send(f"echo {READY}\n")
    terminal.read_until(lambda out: READY in out.split("echo", 1)[-1])


def report(where: str, keys: int, samples: dict[str, list[float]]) -> None:
    print(f"keystroke -> echo, {keys} keys each, {where} (`cat > /dev/null` under a PTY), taking turns")
    print("load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"{'':8} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, taken in samples.items():
        p50, p95 = percentile(taken, 50) * 1000, percentile(taken, 95) * 1000
        print(f"{name:8} {p50:8.2f} {p95:8.2f} {max(taken) * 1000:8.2f}")
    portal, direct = samples["portal"], samples["direct"]
    ratio50 = percentile(portal, 50) / percentile(direct, 50)
    ratio95 = percentile(portal, 95) / percentile(direct, 95)
    print(f"portal/direct: p50 {ratio50:.2f}x, p95 {ratio95:.2f}x (target <= 1.5x)")
    if "relay" in samples:
        # The portal's way is the relay's two loopback hops plus its own shell leg, so 1 + relay/direct is what it
        # would take with a shell leg as fast as the direct way's whole round trip.
        floor = percentile(samples["relay"], 50) / percentile(direct, 50)
        leg = (percentile(portal, 50) - percentile(samples["relay"], 50)) * 1000
        print(f"relay alone/direct: p50 {floor:.2f}x, so no relay through uvicorn gets under {1 + floor:.2f}x here; "
              f"the portal's shell leg (portal - relay) p50 {leg:.2f} ms")  # fmt: skip


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
        web, portal = open_portal(student, job, "bench-terminal-web.log", prompt="$")

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
            ready(direct)
            echo, relay = open_echo()
            ways = {"portal": (portal.send, portal.read_until), "direct": (direct.send, direct.read_until),
                    "relay": (relay.send, relay.read_until)}  # fmt: skip
            samples = measure(ways, args.keys)
            portal.close()
            relay.close()
            stop(echo)
            direct.send("exit\n")
            direct.close()

        report(f"inside SLURM job {job_id}", args.keys, samples)
    finally:
        if job_id:
            subprocess.run(["scancel", job_id], capture_output=True, check=False)
        if web is not None:
            stop(web)
        teardown()


if __name__ == "__main__":
    main()
