"""Child processes under a time limit: each in its own process group, so a limit ends it with everything it started
(data-loader workers, torch.compile's compile workers), and its output both saved to a file and shown as progress."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
LIVE: set[Child] = set()  # children still running, for end_all when the whole run is stopped


def shown(argv: list[str]) -> str:
    """A command as a person would type it from the repository root."""
    words = ["python3" if a == PYTHON else a for a in argv]
    words = [w.replace(f"{ROOT}/", "") for w in words]
    return shlex.join(words)


def log(message: str) -> None:
    print(f"[measure {time.strftime('%H:%M:%S', time.gmtime())}] {message}", flush=True)


@dataclass
class Child:
    """A running child process whose lines are kept, written to `log_path` and echoed with a prefix."""

    argv: list[str]
    log_path: Path
    prefix: str
    echo: Callable[[str], bool] = lambda line: True
    env: dict[str, str] | None = None
    cwd: Path = ROOT
    header: bool = True  # the log's first line is the command (not for a CSV kept as the tool printed it)
    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv,
            cwd=self.cwd,
            env={**os.environ, **(self.env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        LIVE.add(self)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.log_path.open("w") as out:
            if self.header:
                out.write(f"$ {shown(self.argv)}\n")
            for line in self.proc.stdout:
                out.write(line)
                out.flush()
                line = line.rstrip("\n")
                self.lines.append(line)
                if self.echo(line):
                    print(f"  [{self.prefix}] {line}", flush=True)

    def wait(self, timeout: float) -> tuple[int | None, bool]:
        """(exit status, timed out); a child past its limit is ended with its whole group."""
        try:
            status: int | None = self.proc.wait(timeout=max(0.1, timeout))
            timed_out = False
        except subprocess.TimeoutExpired:
            self.kill()
            status, timed_out = self.proc.returncode, True
        self._reader.join(timeout=5)
        LIVE.discard(self)
        return status, timed_out

    def kill(self, hard: bool = False) -> None:
        """End the child's process group: SIGTERM, then SIGKILL after a few seconds (at once if `hard`)."""
        steps = [(signal.SIGTERM, 5.0)] if not hard else []
        for sig, grace in [*steps, (signal.SIGKILL, 5.0)]:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=grace)
                return
            except subprocess.TimeoutExpired:
                continue

    def __hash__(self) -> int:
        return id(self)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


def end_all() -> None:
    """Kill every child still running: each is in its own session, out of reach of a signal to this one's group."""
    for child in list(LIVE):
        child.kill(hard=True)


def run(argv: list[str], log_path: Path, timeout: float, prefix: str, **kwargs) -> dict:
    """Run to the end or to the limit; what happened, for results.json."""
    child = Child(argv, log_path, prefix, **kwargs)
    status, timed_out = child.wait(timeout)
    return {
        "command": shown(argv),
        "exit_status": status,
        "timed_out": timed_out,
        "seconds": round(child.elapsed, 1),
        "log": log_path.name,
        "lines": child.lines,
    }
