"""One SSH connection per SLURM node, kept open, with two long-running commands on it.

- nvidia-smi's own loop (-lms 1000) prints one CSV row per GPU per second;
- a shell loop runs `iostat -x -y -o JSON 1 1` (its JSON closes only when it exits) and reads /proc/meminfo,
  each report ended by a marker line.

One thread reads both channels with select(). A dropped connection is rebuilt within RECONNECT_DELAYS; a
connection that goes silent for STALL_SECONDS is treated as dropped. Nothing is sampled by a new handshake.
"""

from __future__ import annotations

import logging
import select
import shlex
import threading
import time
from dataclasses import dataclass

import paramiko

from clusters.backends import ssh
from clusters.backends.base import BackendError
from telemetry.live import LiveState
from telemetry.parsers import NVIDIA_SMI_FIELDS, parse_iostat_json, parse_meminfo, parse_nvidia_smi_line

logger = logging.getLogger(__name__)

NVIDIA_SMI = [
    "nvidia-smi",
    f"--query-gpu={','.join(NVIDIA_SMI_FIELDS)}",
    "--format=csv,noheader,nounits",
    "-lms",
    "1000",
]
END_OF_REPORT = "@@gpulab-end"
MEMINFO_MARK = "@@gpulab-meminfo"
# A fixed script (no user input): one iostat report and the memory figures per second, until the channel closes.
HOST_LOOP = (
    "while :; do "
    "if command -v iostat >/dev/null 2>&1; then iostat -x -y -o JSON 1 1; else echo '{}'; sleep 1; fi; "
    f"echo {MEMINFO_MARK}; grep -E '^(MemTotal|MemAvailable):' /proc/meminfo; echo {END_OF_REPORT}; "
    "done"
)
STALL_SECONDS = 6.0
RECONNECT_DELAYS = (0.5, 1.0, 2.0)  # then every 2 s: a dropped node is back within 5 s of answering again
NOT_FOUND = 127


@dataclass(frozen=True)
class NodeTarget:
    """What ssh.connect needs to reach a compute node, pinned like a cluster's login host."""

    host: str
    port: int
    host_key: str
    display_name: str


class NodeStream(threading.Thread):
    def __init__(self, state: LiveState, node_id: int, target: NodeTarget, account, stop: threading.Event):
        super().__init__(name=f"node-{target.display_name}", daemon=True)
        self.state, self.node_id, self.target, self.account = state, node_id, target, account
        self.stop_event = stop
        self.connections = 0  # how many times this stream connected, for tests and the node page

    def run(self) -> None:
        failures = 0
        while not self.stop_event.is_set():
            try:
                self._stream()
                failures = 0
            except (BackendError, paramiko.SSHException, OSError, EOFError) as exc:
                failures += 1
                self.state.set_node_status(self.node_id, f"reconnecting: {exc}")
                if failures == 1 or failures % 30 == 0:
                    logger.warning("telemetry: %s: %s; reconnecting", self.target.display_name, exc)
            except Exception:  # a bug must not end the node's telemetry for good
                failures += 1
                logger.exception("telemetry: %s: stream failed; reconnecting", self.target.display_name)
            delay = RECONNECT_DELAYS[min(failures, len(RECONNECT_DELAYS) - 1)]
            self.stop_event.wait(delay)

    def _stream(self) -> None:
        client = ssh.connect(self.target, self.account)
        self.connections += 1
        try:
            transport = ssh.transport(client)
            transport.set_keepalive(2)
            gpu = transport.open_session(timeout=10)
            gpu.exec_command(shlex.join(NVIDIA_SMI))
            host = transport.open_session(timeout=10)
            host.exec_command(shlex.join(["sh", "-c", HOST_LOOP]))
            self.state.set_node_status(self.node_id, "streaming")
            self._read(gpu, host)
        finally:
            client.close()

    def _read(self, gpu: paramiko.Channel, host: paramiko.Channel) -> None:
        buffers = {gpu: "", host: ""}
        open_channels = [gpu, host]
        gpu_rows: list = []
        host_lines: list[str] = []
        last_data = time.monotonic()
        while open_channels and not self.stop_event.is_set():
            readable, _, _ = select.select(open_channels, [], [], 1.0)
            if not readable:
                if time.monotonic() - last_data > STALL_SECONDS:
                    raise ssh.ClusterUnreachable(f"no data for {STALL_SECONDS:.0f} s")
                continue
            for channel in readable:
                data = channel.recv(65536)
                if not data:
                    open_channels.remove(channel)
                    if channel is gpu:
                        self._gpu_ended(gpu)
                    else:
                        raise ssh.ClusterUnreachable("the host sampler stopped")
                    continue
                last_data = time.monotonic()
                text = buffers[channel] + data.decode(errors="replace")
                *lines, buffers[channel] = text.split("\n")
                if channel is gpu:
                    self._gpu_lines(lines, gpu_rows)
                else:
                    self._host_lines(lines, host_lines)

    def _gpu_lines(self, lines: list[str], rows: list) -> None:
        """Rows arrive per GPU; a block ends when an index repeats (or on the last GPU seen before)."""
        for line in lines:
            sample = parse_nvidia_smi_line(line)
            if sample is None:
                continue
            if rows and sample.index <= rows[-1].index:
                self.state.put_gpus(self.node_id, rows[:])
                rows.clear()
            rows.append(sample)
        if rows and self._known_gpus() and len(rows) >= self._known_gpus():
            self.state.put_gpus(self.node_id, rows[:])
            rows.clear()

    def _known_gpus(self) -> int:
        live = self.state.nodes.get(self.node_id)
        return len(live.gpus) if live else 0

    def _gpu_ended(self, gpu: paramiko.Channel) -> None:
        status = gpu.recv_exit_status()
        error = gpu.recv_stderr(4096).decode(errors="replace").strip() if gpu.recv_stderr_ready() else ""
        if status == NOT_FOUND:
            self.state.set_node_status(self.node_id, "no GPU on this node (nvidia-smi not found)", has_gpu=False)
        else:
            self.state.set_node_status(self.node_id, f"nvidia-smi stopped: {error or f'exit {status}'}", has_gpu=False)

    def _host_lines(self, lines: list[str], report: list[str]) -> None:
        for line in lines:
            if line.strip() != END_OF_REPORT:
                report.append(line)
                continue
            text = "\n".join(report)
            report.clear()
            iostat, _, meminfo = text.partition(MEMINFO_MARK)
            self.state.put_host(self.node_id, parse_iostat_json(iostat), parse_meminfo(meminfo))
