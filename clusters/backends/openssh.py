"""OpenSSH's client (`ssh`) to a cluster's login node, for the paths where every byte counts: the terminal's keys
and large file downloads. paramiko's packet path in Python costs there (bench/terminal.py, bench/files.py); the
pooled paramiko connection (clusters/backends/ssh.py) stays the way for everything else.

Invariant: ssh reads no config file, agent or prompt and accepts no host key but the pinned one. The private key
and the pinned host key reach it as unnamed in-memory files (memfd, 0600) it opens through /proc/<portal>/fd, never
on disk; ssh closes the descriptors it inherits, so an Invocation holds them until ssh is done. The remote command
is an argument list joined with shlex: nothing a user typed becomes shell code.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import AsyncGenerator

from django.conf import settings

from . import ssh
from .base import BackendError

# Bulk reads: no PTY; AES-GCM first, which hardware AES makes the cheapest cipher on both ends.
STREAM_OPTIONS = ["-T", "-o", "Ciphers=^aes128-gcm@openssh.com"]

# No config files, agent or prompts; no host key but the pinned one; a connection that notices a cluster gone silent.
OPTIONS = [
    "-F", "/dev/null",
    "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none",
    "-o", "PasswordAuthentication=no", "-o", "KbdInteractiveAuthentication=no",
    "-o", "StrictHostKeyChecking=yes", "-o", "GlobalKnownHostsFile=/dev/null", "-o", "UpdateHostKeys=no",
    "-o", "ServerAliveInterval=30", "-o", "ServerAliveCountMax=4", "-o", "LogLevel=ERROR",
]  # fmt: skip


def usable(login) -> bool:
    """OpenSSH can sign in as `login`: it has a key (ssh is never given a password) and `ssh` is installed."""
    return login is not None and login.auth_method != "password" and shutil.which("ssh") is not None


def environment(**extra: str) -> dict[str, str]:
    """What ssh inherits: a search path and a home, nothing of the portal's own settings or secrets."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"), **extra}


def _memory_file(name: str, text: str) -> tuple[int, str]:
    """An unnamed in-memory file readable only by this user: (its descriptor, the path a child opens it by)."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    os.fchmod(fd, 0o600)  # OpenSSH refuses a private key others could read
    os.write(fd, text.encode())
    return fd, f"/proc/{os.getpid()}/fd/{fd}"


class Invocation:
    """`argv`: ssh running `remote` as `login` on the cluster's login node, `options` before the host.

    Raises BackendError when the cluster has no pinned host key. close() (or leaving the `with`) once ssh has
    exited or been stopped gives back the in-memory files."""

    def __init__(self, cluster, login, remote: list[str], *, options: list[str]):
        ssh.require_pinned(cluster)
        self.held: list[int] = []
        key = self._hold("gpulab-ssh-key", login.secret().strip() + "\n")
        known = self._hold(
            "gpulab-known-host", f"{ssh.known_hosts_name(cluster.host, cluster.port)} {cluster.host_key.strip()}\n"
        )
        self.argv = [
            "ssh", *OPTIONS, *options,
            "-o", f"ConnectTimeout={int(settings.GPULAB_SSH_CONNECT_TIMEOUT)}",
            "-o", f"UserKnownHostsFile={known}", "-i", key,
            "-p", str(cluster.port), "-l", login.username, "--", cluster.host, shlex.join(remote),
        ]  # fmt: skip

    def _hold(self, name: str, text: str) -> str:
        fd, path = _memory_file(name, text)
        self.held.append(fd)
        return path

    def close(self) -> None:
        while self.held:
            with contextlib.suppress(OSError):
                os.close(self.held.pop())

    def __enter__(self) -> Invocation:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


async def output(cluster, login, remote: list[str], *, chunk: int = 1 << 20) -> AsyncGenerator[bytes, None]:
    """The standard output of `remote`, run as `login`, as it arrives (up to `chunk` bytes at a time).

    Flow control is the reader's: while it does not ask for more, the pipe fills and ssh, then the cluster, wait.
    Closing the generator early (the reader stopped or was cancelled) stops ssh; the connection's end stops the
    remote command. BackendError, after whatever arrived, when ssh cannot start or it or the command fails."""
    with Invocation(cluster, login, remote, options=STREAM_OPTIONS) as invocation, tempfile.TemporaryFile() as errors:
        try:
            proc = await asyncio.create_subprocess_exec(
                *invocation.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,  # a file, not a pipe: never full while the output is read
                env=environment(),
                start_new_session=True,
                limit=chunk,
            )
        except OSError as exc:
            raise BackendError(f"OpenSSH could not start: {exc}") from None
        try:
            assert proc.stdout is not None  # stdout=PIPE
            while data := await proc.stdout.read(chunk):
                yield data
            if await proc.wait():
                errors.seek(0)
                said = errors.read(2000).decode(errors="replace").strip() or "no message"
                raise BackendError(f"ssh to {cluster.display_name} ended with {proc.returncode}: {said}")
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
