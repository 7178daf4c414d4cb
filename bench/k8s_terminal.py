"""Keystroke -> echo in a shell in a Kubernetes job's pod: through the portal against the exec stream directly.

    .venv/bin/python bench/k8s_terminal.py [--keys 300]

Starts the emulated API server over TLS on 127.0.0.1 (tests/k8s_emulator.py; its kubelet part runs the pod's shell
as a real bash under a PTY, tests/k8s_kubelet.py), records a running job whose pod it holds, and opens the same
shell two ways, each running `cat > /dev/null` so every key is echoed by the PTY's line discipline:
- portal: the browser's WebSocket on uvicorn (portal.asgi) -> sessions/terminal.py -> the exec stream
  (clusters/backends/kubernetes/shell.py, the official client's stream());
- direct: the official client's stream() to the API server, as `kubectl exec -it` would.
Each key is sent once the previous one's echo has arrived. Prints p50/p95/max per way and the ratio (target <= 1.5).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, make_lab, percentile, setup_database, start, stop, wait_for
from terminal import READY, PortalTerminal, free_port, measure

NAMESPACE = "bench-terminal"


class DirectExec:
    """`kubectl exec -it <pod> -- sh`: the official client's exec stream, read on this thread."""

    def __init__(self, configuration, pod: str, argv: list[str]):
        from kubernetes.client import ApiClient, CoreV1Api
        from kubernetes.stream import stream

        core = CoreV1Api(ApiClient(configuration))
        self.ws = stream(
            core.connect_get_namespaced_pod_exec, pod, NAMESPACE, command=argv, stdin=True, stdout=True,
            stderr=False, tty=True, binary=True, _preload_content=False,
        )  # fmt: skip

    def send(self, text: str) -> None:
        self.ws.write_stdin(text.encode())

    def read_until(self, predicate, timeout: float = 30) -> str:
        out = ""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.ws.is_open():
            self.ws.update(timeout=max(0.0, deadline - time.monotonic()))
            out += self.ws.read_stdout(timeout=0).decode(errors="replace")
            if predicate(out):
                return out
        return out

    def close(self) -> None:
        self.ws.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=300)
    args = parser.parse_args()

    teardown = setup_database()
    web = emulator = None
    try:
        from django.test import Client

        from clusters.backends.kubernetes.api import configuration
        from clusters.backends.kubernetes.shell import SHELL
        from clusters.models import AuthMethod, Cluster, ClusterAccount
        from core.choices import JobState
        from jobs.models import Job
        from tests.integration.k8s import Emulator

        course, student, _, template = make_lab()
        emulator = Emulator(Path(tempfile.mkdtemp(prefix="gpulab-k8s-terminal-")), mpi=False)
        cluster = Cluster.objects.create(name="bench-k8s", kind="kubernetes")
        account = ClusterAccount(cluster=cluster, username="portal", auth_method=AuthMethod.KUBECONFIG)
        account.set_secret(emulator.kubeconfig("bench-token"))
        account.save()
        job = Job.objects.create(
            owner=student, course=course, template=template, cluster=cluster, account=account, script="",
            state=JobState.RUNNING,
        )  # fmt: skip
        job.scheduler_id = f"{NAMESPACE}/{job.pk}"
        job.save(update_fields=["scheduler_id"])
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        emulator.call("POST", "/api/v1/namespaces", namespace)
        labels = {"app.kubernetes.io/managed-by": "gpulab-portal", "gpulab.io/job": str(job.pk)}
        workload = {"metadata": {"namespace": NAMESPACE}, "spec": {"template": {"metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}}}  # fmt: skip
        emulator.start_pod(workload, "bench-pod", phase="Running", ready=True)

        client = Client()
        client.force_login(student)
        cookie = client.cookies["sessionid"].value
        port = free_port()
        log = Path(tempfile.gettempdir()) / "bench-k8s-terminal-web.log"
        argv = [str(ROOT / ".venv/bin/uvicorn"), "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
        web = start(argv, log)
        wait_for(lambda: "Application startup complete" in log.read_text(), 60, "uvicorn to start")

        origin = f"http://127.0.0.1:{port}"
        portal = PortalTerminal(f"ws://127.0.0.1:{port}/ws/jobs/{job.pk}/terminal/?cols=120&rows=40", cookie, origin)
        portal.send(f"echo {READY}\n")
        portal.read_until(lambda out: READY in out.split("echo", 1)[-1])
        portal_samples = measure(portal.send, portal.read_until, args.keys)
        portal.close()

        direct = DirectExec(configuration(cluster, account), "bench-pod", SHELL)
        direct.send(f"echo {READY}\n")
        direct.read_until(lambda out: READY in out.split("echo", 1)[-1])
        direct_samples = measure(direct.send, direct.read_until, args.keys)
        direct.close()

        print(f"keystroke -> echo, {args.keys} keys each, in pod bench-pod of an emulated API server (TLS, loopback)")
        print(f"{'':8} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
        for name, samples in (("portal", portal_samples), ("direct", direct_samples)):
            p50, p95 = percentile(samples, 50) * 1000, percentile(samples, 95) * 1000
            print(f"{name:8} {p50:8.2f} {p95:8.2f} {max(samples) * 1000:8.2f}")
        ratio50 = percentile(portal_samples, 50) / percentile(direct_samples, 50)
        ratio95 = percentile(portal_samples, 95) / percentile(direct_samples, 95)
        print(f"portal/direct: p50 {ratio50:.2f}x, p95 {ratio95:.2f}x (target <= 1.5x)")
    finally:
        if web is not None:
            stop(web)
        if emulator is not None:
            emulator.stop()
        teardown()


if __name__ == "__main__":
    main()
