"""The kubelet's part of the test API server: `pods/<name>/exec` runs a real local process, as a kubelet runs one in
the pod's container, and speaks the API server's exec stream to the client.

The stream is a WebSocket with the sub-protocol v5.channel.k8s.io or v4.channel.k8s.io (whichever the client offers
first). Every message starts with a channel byte: 0 stdin, 1 stdout, 2 stderr, 3 the exit status (a v1 Status),
4 terminal size ({"Width": …, "Height": …}), and in v5 255 closes a channel. With tty=true the process gets a PTY
(stdout and stderr merged, as in a container), otherwise pipes. Like a container, the process sees HOSTNAME set to the
pod's name; it runs in a scratch directory per container (its home, as if the image's filesystem) on this
machine, as the emulator's own user.

A pod that is not Running answers 400 as the API server does ("container not found" for a container that the pod
does not have), before the upgrade.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import pty
import struct
import subprocess
import tempfile
import termios
from pathlib import Path

from aiohttp import WSMsgType, web

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
SCRATCH = Path(tempfile.gettempdir()) / "gpulab-kubelet"


def exit_status(code: int) -> bytes:
    if code == 0:
        return json.dumps({"metadata": {}, "status": "Success"}).encode()
    return json.dumps(
        {
            "metadata": {},
            "status": "Failure",
            "message": f"command terminated with non-zero exit code: exit status {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
        }
    ).encode()


def refusal(pod: dict, container: str) -> str:
    """Why the API server would refuse to exec here, or ""."""
    names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    if container and container not in names:
        return f"container {container} is not valid for pod {pod['metadata']['name']}"
    if len(names) > 1 and not container:
        return f"a container name must be specified for pod {pod['metadata']['name']}, choose one of: {names}"
    if (pod.get("status") or {}).get("phase") != "Running":
        return f'unable to upgrade connection: container not found ("{container or names[0]}")'
    return ""


class Process:
    """The command under a PTY (tty) or pipes; output arrives as (channel, bytes) on a queue, None at the end."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, tty: bool):
        self.output: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
        self.loop = asyncio.get_running_loop()
        self.master = -1
        if tty:
            self.master, slave = pty.openpty()
            self.proc = subprocess.Popen(
                argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=env,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),  # the PTY becomes its terminal: job control
            )
            os.close(slave)
            os.set_blocking(self.master, False)
            self.readers = {self.master: STDOUT}
        else:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd
            )
            self.readers = {self.proc.stdout.fileno(): STDOUT, self.proc.stderr.fileno(): STDERR}
            for fd in self.readers:
                os.set_blocking(fd, False)
        for fd in self.readers:
            self.loop.add_reader(fd, self._readable, fd)

    def _readable(self, fd: int) -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:  # EIO: the PTY's last holder exited
            data = b""
        if data:
            self.output.put_nowait((self.readers[fd], data))
            return
        self.loop.remove_reader(fd)
        del self.readers[fd]
        if not self.readers:
            self.output.put_nowait(None)

    def write(self, data: bytes) -> None:
        if self.master >= 0:
            os.write(self.master, data)
        elif self.proc.stdin:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def close_stdin(self) -> None:
        if self.master >= 0:
            os.write(self.master, b"\x04")
        elif self.proc.stdin:
            self.proc.stdin.close()

    def resize(self, cols: int, rows: int) -> None:
        if self.master >= 0:
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    async def wait(self) -> int:
        return await asyncio.to_thread(self.proc.wait)

    def stop(self) -> None:
        for fd in list(self.readers):
            self.loop.remove_reader(fd)
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 9) if self.master >= 0 else self.proc.kill()
        if self.master >= 0:
            with contextlib.suppress(OSError):
                os.close(self.master)
            self.master = -1


async def exec_in_pod(request: web.Request, pod: dict) -> web.StreamResponse:
    """Serve one exec stream into `pod` (a stored Pod object)."""
    query = request.query
    container = query.get("container", "")
    argv = query.getall("command", [])
    why = refusal(pod, container) or ("" if argv else "you must specify at least 1 command")
    if why:
        body = {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure", "code": 400}
        return web.json_response({**body, "reason": "BadRequest", "message": why}, status=400)
    socket = web.WebSocketResponse(protocols=PROTOCOLS, max_msg_size=2**24)
    await socket.prepare(request)
    name = pod["metadata"]["name"]
    container = container or pod["spec"]["containers"][0]["name"]
    cwd = SCRATCH / pod["metadata"].get("namespace", "default") / name / container  # each container's own files
    cwd.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "HOSTNAME": name, "TERM": "xterm"}
    tty = query.get("tty") in ("true", "1")
    process = Process(argv, env, cwd, tty)
    relay = asyncio.create_task(_output(socket, process))
    try:
        async for message in socket:
            if message.type not in (WSMsgType.BINARY, WSMsgType.TEXT) or not message.data:
                continue
            data = message.data if isinstance(message.data, bytes) else message.data.encode()
            channel, payload = data[0], data[1:]
            if channel == STDIN:
                process.write(payload)
            elif channel == RESIZE:
                size = json.loads(payload)
                process.resize(int(size["Width"]), int(size["Height"]))
            elif channel == CLOSE and payload[:1] == bytes([STDIN]):
                process.close_stdin()
    finally:
        relay.cancel()
        process.stop()
    return socket


async def _output(socket: web.WebSocketResponse, process: Process) -> None:
    while (item := await process.output.get()) is not None:
        channel, data = item
        await socket.send_bytes(bytes([channel]) + data)
    code = await process.wait()
    await socket.send_bytes(bytes([ERROR]) + exit_status(code))
    await socket.close()
