"""The emulated Kubernetes cluster of `make demo`: the tests' API server (tests/k8s_emulator.py) over TLS with a client
CA, and one node beside it (tests/k8s_node.py) that runs the bundled workloads' pods as local processes.

    python -m tests.k8s_demo STATE_DIR [--port 6443]

Writes STATE_DIR/kubeconfig (the API server's address and CA, and a client certificate for the portal, valid a
year; made anew at each start), prints "listening URL" once the API server answers, and runs until SIGTERM, which
stops the node's pods too. The cluster keeps its objects in memory: a restart starts it empty.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from tests.integration.k8s import Emulator

CERTIFICATE_DAYS = 365


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("state", type=Path, help="where the certificates, the kubeconfig and the pods' files go")
    parser.add_argument("--port", type=int, default=6443)
    args = parser.parse_args()
    state = args.state.resolve()
    (state / "node").mkdir(parents=True, exist_ok=True)
    state.chmod(0o700)  # the emulated API server's and the portal's private keys: nobody else's to read
    stopped = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopped.set())
    emulator = Emulator(state, mpi=False, node=state / "node", port=args.port, days=CERTIFICATE_DAYS)
    try:
        kubeconfig = state / "kubeconfig"
        kubeconfig.touch(mode=0o600)
        kubeconfig.write_text(emulator.kubeconfig(None, context="emulated"))
        print(f"listening {emulator.url}", flush=True)
        while not stopped.wait(1):
            if emulator.proc.poll() is not None:
                raise SystemExit(f"the Kubernetes emulator stopped (exit {emulator.proc.returncode}); see its log")
    finally:
        if emulator.proc.poll() is None:
            emulator.stop()


if __name__ == "__main__":
    main()
