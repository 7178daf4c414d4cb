"""Keystroke -> echo in a shell in a Kubernetes job's pod: through the portal against the exec stream directly.

    .venv/bin/python bench/k8s_terminal.py [--keys 300]

Starts the emulated API server over TLS on 127.0.0.1 (tests/k8s_emulator.py; its kubelet part runs the pod's shell
as a real bash under a PTY, tests/k8s_kubelet.py), records a running job whose pod it holds, and opens the same
shell two ways, each running `cat > /dev/null` so every key is echoed by the PTY's line discipline:
- portal: the browser's WebSocket on uvicorn (portal.asgi) -> sessions/terminal.py -> the exec stream
  (clusters/backends/kinds/kubernetes/shell.py, the official client's stream());
- direct: the official client's stream() to the API server, as `kubectl exec -it` would.
Each key is sent once the previous one's echo has arrived, the two ways taking turns key by key (bench/terminal.py's
measure). Prints the load average, p50/p95/max per way and the ratio (target <= 1.5).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import make_lab, setup_database, stop
from terminal import measure, open_echo, open_portal, ready, report

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
        from clusters.backends.kinds.kubernetes.api import configuration
        from clusters.backends.kinds.kubernetes.shell import SHELL
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

        web, portal = open_portal(student, job, "bench-k8s-terminal-web.log")

        direct = DirectExec(configuration(cluster, account), "bench-pod", SHELL)
        ready(direct)
        echo, relay = open_echo()
        ways = {"portal": (portal.send, portal.read_until), "direct": (direct.send, direct.read_until),
                "relay": (relay.send, relay.read_until)}  # fmt: skip
        samples = measure(ways, args.keys)
        portal.close()
        relay.close()
        stop(echo)
        direct.close()

        report("in pod bench-pod of an emulated API server (TLS, loopback)", args.keys, samples)
    finally:
        if web is not None:
            stop(web)
        if emulator is not None:
            emulator.stop()
        teardown()


if __name__ == "__main__":
    main()
