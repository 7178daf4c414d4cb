"""Train a tiny checkpoint once per session, and start the inference server as a real process on 127.0.0.1."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

WORKLOADS = Path(__file__).resolve().parents[1]
TRAIN = WORKLOADS / "trainer" / "train.py"
SERVER = WORKLOADS / "inference" / "server.py"
# In-process tests import the workloads' modules the way their scripts find them: by their own directories.
sys.path.insert(0, str(WORKLOADS / "trainer"))
sys.path.insert(0, str(WORKLOADS / "inference"))
# The documented log line (docs/architecture.md: the trainer's contract with the portal's telemetry parser).
LOG_LINE = re.compile(
    r"^epoch=(?P<epoch>\d+) step=(?P<step>\d+) loss=(?P<loss>[0-9.]+) tok/s=(?P<toks>[0-9.]+)"
    r"(?: step_ms=(?P<step_ms>[0-9.]+))?(?: total_steps=(?P<total_steps>\d+))?(?: mfu=(?P<mfu>[0-9.]+))?$"
)
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def train(*args: str, run_dir: Path, torchrun: int = 0, timeout: int = 240, env: dict | None = None) -> list[dict]:
    """Run the trainer; return its parsed log lines (and keep the raw output on the function for asserts)."""
    base = ["--num_workers", "0", "--seq_len", "64", "--log_every", "10", "--run_dir", str(run_dir), *args]
    if torchrun:
        argv = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            f"--nproc_per_node={torchrun}",
            f"--master_port={free_port()}",
            str(TRAIN),
            *base,
        ]
    else:
        argv = [sys.executable, str(TRAIN), *base]
    result = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, env={**ENV, **(env or {})}, check=False
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    train.last_output = result.stdout
    return [m.groupdict() for m in map(LOG_LINE.match, result.stdout.splitlines()) if m]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("run")
    train("--max_steps", "150", "--batch_size", "16", "--lr", "2e-3", run_dir=run_dir)
    return run_dir


class Server:
    def __init__(self, checkpoint: Path, *extra: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = checkpoint.parent / f"server-{self.port}.log"
        argv = [
            sys.executable,
            str(SERVER),
            "--checkpoint",
            str(checkpoint),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *extra,
        ]
        self.proc = subprocess.Popen(
            argv, cwd=SERVER.parent, env=ENV, stdout=self.log.open("w"), stderr=subprocess.STDOUT
        )
        self.client = httpx.Client(base_url=self.url, timeout=60)

    def wait_until(self, status: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.client.get("/healthz").status_code == status:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"/healthz never answered {status}; log:\n{self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(timeout=20)


@pytest.fixture(scope="session")
def server(checkpoint):
    srv = Server(checkpoint, "--max-batch", "16", "--max-wait-ms", "20")
    srv.wait_until(200)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def unbatched_server(checkpoint):
    srv = Server(checkpoint, "--max-batch", "1")
    srv.wait_until(200)
    yield srv
    srv.stop()


@pytest.fixture
def empty_checkpoint_dir(tmp_path) -> Path:
    return tmp_path / "not-yet"


def copy_checkpoint(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "config.json", target / "config.json")
    shutil.copy(source / "model.pt", target / "model.pt")
