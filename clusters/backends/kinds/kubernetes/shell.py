"""A shell in a Kubernetes job's pod: the API server's exec stream (`pods/<name>/exec`, a WebSocket speaking
v5.channel.k8s.io or v4), opened with the official client's stream() and relayed by sessions/terminal.py.

Invariant: the command is fixed (SHELL); only keystrokes typed into its TTY come from the user. A shell opens only
in a Running pod of this job (its own label, not a helper's) and in one of that pod's containers; the target the page
asks for is checked against that list, so no other pod of the namespace can be reached. One thread per terminal
reads the stream, so a slow frame never holds the portal's event loop; it wakes the loop through a pipe, the way
paramiko's channels do for the SSH terminal.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from typing import TYPE_CHECKING

from kubernetes.client import ApiClient, CoreV1Api
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream
from kubernetes.stream.ws_client import RESIZE_CHANNEL, STDIN_CHANNEL, STDOUT_CHANNEL
from websocket import WebSocketException

from ...base import BackendError
from ...kind import ActionRefused
from .api import configuration
from .backend import DEFAULT_CONTAINER, KubernetesBackend, name_of, split_id

if TYPE_CHECKING:
    from kubernetes.stream.ws_client import WSClient

# bash where the image has it (a login shell reads the image's profile), else sh: no value of the user's in it.
SHELL = ["/bin/sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi"]


def _size(cols: int, rows: int) -> bytes:
    return json.dumps({"Width": max(2, min(cols, 1000)), "Height": max(2, min(rows, 500))}).encode()


class PodTerminal:
    """The exec stream as a clusters/backends/terminal.Terminal."""

    failure = ""  # the stream's end is the shell's own; the API server's refusals were raised when it opened

    def __init__(self, ws: WSClient):
        self.ws = ws
        self._lock = threading.Lock()
        self._out = bytearray()
        self._done = False
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self._reader = threading.Thread(target=self._follow, name="pod-terminal", daemon=True)
        self._reader.start()

    def _follow(self) -> None:
        try:
            while self.ws.is_open():
                self.ws.update(timeout=None)  # blocks in this thread until frames arrive or the stream closes
                data = self.ws.read_channel(STDOUT_CHANNEL)  # a TTY merges stderr into stdout
                if data:
                    with self._lock:
                        self._out += data
                    self._wake()
        except (WebSocketException, OSError, ValueError):
            pass  # the stream broke or was closed under us: the shell is gone either way
        finally:
            self._done = True
            self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):  # a full pipe already says "readable"
            os.write(self._wake_write, b"!")

    def fileno(self) -> int:
        return self._wake_read

    def read(self) -> bytes:
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self._wake_read, 4096):
                pass
        with self._lock:
            out, self._out = bytes(self._out), bytearray()
        return out

    @property
    def ended(self) -> bool:
        return self._done and not self._out

    def write(self, data: bytes) -> None:
        try:
            self.ws.write_channel(STDIN_CHANNEL, data)
        except (WebSocketException, OSError) as exc:
            raise BackendError(f"The shell's connection is gone ({exc}).") from None

    def resize(self, cols: int, rows: int) -> None:
        with contextlib.suppress(WebSocketException, OSError):
            self.ws.write_channel(RESIZE_CHANNEL, _size(cols, rows))

    def close(self) -> None:
        with contextlib.suppress(WebSocketException, OSError):
            self.ws.sock.send_close()
        with contextlib.suppress(WebSocketException, OSError):
            self.ws.sock.abort()  # wakes the reader thread out of its wait
        self._reader.join(timeout=2)
        if not self._reader.is_alive():  # else leave the pipe to it rather than close an fd it may still write
            for fd in (self._wake_read, self._wake_write):
                with contextlib.suppress(OSError):
                    os.close(fd)


def _running_pods(job) -> list[dict]:
    pods = KubernetesBackend(job.cluster, job.account).pods(job.scheduler_id, role="")  # the job's own, no helpers
    return [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]


def _containers(pod: dict) -> list[str]:
    names = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    default = ((pod.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CONTAINER)
    return sorted(names, key=lambda name: name != default)


def targets(job) -> list[str]:
    """Where a shell can open in this job, "pod/container", the pod's default container first."""
    if not job.scheduler_id:
        return []
    return [f"{name_of(pod)}/{container}" for pod in _running_pods(job) for container in _containers(pod)]


def open_shell(job, *, cols: int, rows: int, target: str = "") -> PodTerminal:
    found = targets(job)
    if not found:
        raise ActionRefused("This job has no running pod yet; open the terminal once the job runs.")
    if target and target not in found:
        raise ActionRefused("That container is not one of this job's running pods. Pick one from the list.")
    pod, container = (target or found[0]).split("/", 1)
    namespace, _ = split_id(job.scheduler_id)
    account = job.account or job.cluster.service_account()
    # A client of its own: stream() swaps the client's transport while it connects, which must not touch the
    # pooled client other requests share.
    core = CoreV1Api(ApiClient(configuration(job.cluster, account)))
    try:
        ws = stream(
            core.connect_get_namespaced_pod_exec,
            pod,
            namespace,
            command=SHELL,
            container=container,
            stdin=True,
            stdout=True,
            stderr=False,
            tty=True,
            binary=True,
            _preload_content=False,
        )
    except ApiException as exc:
        reason = str(exc.reason or exc).split("-+-+-")[0].strip()[:200]
        raise BackendError(
            f"Could not open a shell in pod {pod} ({container}) on “{job.cluster.display_name}”: {reason}. Try again "
            "in a minute; if it keeps failing, tell your instructor."
        ) from None
    terminal = PodTerminal(ws)
    terminal.resize(cols, rows)
    return terminal
