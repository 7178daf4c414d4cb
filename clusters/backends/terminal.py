"""A terminal on a cluster: a PTY on the login node running one fixed command, for the portal to relay.

Invariant: the command is an argument list chosen by the kind (the SLURM kinds' srun: slurm_family/srun.py),
joined with shlex.join; only keystrokes typed into the PTY come from the user. The host key is the pinned one, always.

Two ways, one interface (Terminal, below; the Kubernetes kind's exec stream has it too):
- OpenSSH's client (`ssh -tt`, clusters/backends/openssh.py) under a local PTY, for key logins: every key and
  every echo crosses one C process, where paramiko's packet path in Python cost about 0.1 ms each way
  (bench/terminal.py); the window size follows the PTY.
- an SSH channel with a PTY on the pooled paramiko connection (clusters/backends/ssh.py), for password logins and
  where no `ssh` is installed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import signal
import socket
import struct
import subprocess
import tempfile
import termios
import threading
from typing import Protocol

import paramiko

from . import openssh, ssh
from .base import BackendError

TERM = "xterm-256color"  # what xterm.js understands
# A terminal's own: a remote PTY, and no escape character (a student typing "~." must not cut their own shell).
TERMINAL_OPTIONS = ["-tt", "-e", "none"]


def _size(cols: int, rows: int) -> tuple[int, int]:
    return max(2, min(cols, 1000)), max(2, min(rows, 500))


def _set_pty_size(fd: int, cols: int, rows: int) -> None:
    cols, rows = _size(cols, rows)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Terminal(Protocol):
    """What sessions/terminal.py relays: a PTY inside a running job, owned by one socket."""

    @property
    def failure(self) -> str:
        """Why the shell could not open, in words for the page, once it has ended; "" when the shell itself ended."""

    @property
    def ended(self) -> bool:
        """The shell is gone: nothing more will be read."""

    def fileno(self) -> int:
        """Readable when output or the end arrives, for an event loop's add_reader."""

    def read(self) -> bytes:
        """What is there now, without blocking once fileno() was readable; b"" when nothing (or the end)."""

    def write(self, data: bytes) -> None:
        """Keys, as typed or pasted."""

    def resize(self, cols: int, rows: int) -> None: ...

    def close(self) -> None:
        """End the shell and free what it holds; called once, by the socket's end."""


class ChannelTerminal:
    """One PTY channel. read() is non-blocking once fileno() is readable; b"" with ended=True means it closed."""

    failure = ""  # a channel's end is the shell's own; connection errors were raised when it opened

    def __init__(self, channel: paramiko.Channel):
        self.channel = channel

    def fileno(self) -> int:
        """Readable when output or the end arrives (paramiko's pipe), for an event loop's add_reader."""
        return self.channel.fileno()

    def read(self) -> bytes:
        out = b""
        while self.channel.recv_ready():
            out += self.channel.recv(65536)
        while self.channel.recv_stderr_ready():
            out += self.channel.recv_stderr(65536)
        return out

    @property
    def ended(self) -> bool:
        return self.channel.closed or (self.channel.exit_status_ready() and not self.channel.recv_ready())

    def write(self, data: bytes) -> None:
        self.channel.sendall(data)

    def resize(self, cols: int, rows: int) -> None:
        cols, rows = _size(cols, rows)
        self.channel.resize_pty(width=cols, height=rows)

    def close(self) -> None:
        self.channel.close()


class OpenSSHTerminal:
    """`ssh -tt` under a local PTY whose other end this holds. read() takes what one readiness of fileno() offers."""

    def __init__(self, proc: subprocess.Popen, pty: int, errors, cluster, login, invocation: openssh.Invocation):
        self.proc, self.pty, self.errors, self.invocation = proc, pty, errors, invocation
        self.cluster, self.login = cluster, login
        self._ended = False
        self._early = b""  # keys typed before ssh took the PTY raw, held so the PTY does not echo them here too

    def fileno(self) -> int:
        return self.pty

    def read(self) -> bytes:
        if self._early and self._raw():
            with contextlib.suppress(OSError):  # ssh may have gone meanwhile: the read below says so
                self.write(b"")
        try:
            data = os.read(self.pty, 65536)
        except OSError:  # EIO: ssh has exited and its side of the PTY is closed
            data = b""
        self._ended = self._ended or not data
        return data

    @property
    def ended(self) -> bool:
        return self._ended

    @property
    def failure(self) -> str:
        """Why OpenSSH could not open the shell, in words; "" when the shell itself ended."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)
        if self.proc.returncode != 255:  # ssh's own failures; otherwise the remote command's exit status
            return ""
        try:
            self.errors.seek(0)
            said = [line for line in self.errors.read().decode(errors="replace").splitlines() if line.strip()]
        except (OSError, ValueError):  # closed meanwhile (the socket went first): nobody is left to tell
            return ""
        last = said[-1].strip() if said else "no answer"
        name = self.cluster.display_name
        if any("Host key verification failed" in line or "IDENTIFICATION HAS CHANGED" in line for line in said):
            return (
                f"Refusing to connect to “{name}”: it did not offer the pinned host key "
                f"({ssh.fingerprint(self.cluster.host_key)}). An admin must check the cluster and re-pin its key."
            )
        if "Permission denied" in last:
            return f"The cluster “{name}” refused the login {self.login.username}: check the account's SSH key."
        return (
            f"Could not open a terminal on “{name}”: {last}. Try again in a minute; if it keeps failing, tell your "
            "instructor."
        )

    def _raw(self) -> bool:
        """ssh has the session and has put its side of the PTY in raw mode (it sent the PTY's first, cooked modes to
        the cluster, so the remote PTY echoes and translates line ends as a terminal's would)."""
        try:
            return not termios.tcgetattr(self.pty)[3] & termios.ECHO
        except (termios.error, OSError):  # the PTY is gone: nothing to hold keys back for
            return True

    def write(self, data: bytes) -> None:
        if self._early or not self._raw():
            self._early += data
            if not self._raw():
                return
            data, self._early = self._early, b""
        view = memoryview(data)
        while view:
            view = view[os.write(self.pty, view) :]

    def resize(self, cols: int, rows: int) -> None:
        _set_pty_size(self.pty, cols, rows)
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGWINCH)  # ssh reads the new size and sends it on: the remote PTY follows

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # ssh closes the connection; srun's shell gets its hangup
            threading.Thread(target=self.proc.wait, name="ssh-reaper", daemon=True).start()  # no zombie left behind
        with contextlib.suppress(OSError):
            os.close(self.pty)
        self.invocation.close()
        self.errors.close()


def _openssh(cluster, login, argv: list[str], cols: int, rows: int) -> OpenSSHTerminal:
    invocation = openssh.Invocation(cluster, login, argv, options=TERMINAL_OPTIONS)
    pty, tty_side = os.openpty()
    _set_pty_size(tty_side, cols, rows)
    errors = tempfile.TemporaryFile()  # noqa: SIM115 (the terminal owns it: ssh's own complaints, read at the end)
    try:
        proc = subprocess.Popen(  # a fixed argument list; the remote command is joined with shlex
            invocation.argv,
            stdin=tty_side,
            stdout=tty_side,
            stderr=errors,
            start_new_session=True,
            env=openssh.environment(TERM=TERM),
        )
    except OSError as exc:
        os.close(pty)
        invocation.close()
        errors.close()
        raise BackendError(f"Could not start OpenSSH for a terminal on “{cluster.display_name}”: {exc}.") from None
    finally:
        os.close(tty_side)
    return OpenSSHTerminal(proc, pty, errors, cluster, login, invocation)


def open_terminal(cluster, login, argv: list[str], *, cols: int, rows: int) -> Terminal:
    """Run `argv` under a PTY as `login` (a ClusterAccount the portal signs in with)."""
    if openssh.usable(login):
        return _openssh(cluster, login, argv, cols, rows)
    try:
        transport = ssh.transport(ssh.pool.client(cluster, login))
        if isinstance(transport.sock, socket.socket):  # keystrokes go out at once, not batched by Nagle
            with contextlib.suppress(OSError):
                transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        channel = transport.open_session(timeout=15)
        cols, rows = _size(cols, rows)
        channel.get_pty(term=TERM, width=cols, height=rows)
        channel.exec_command(shlex.join(argv))
    except (OSError, paramiko.SSHException) as exc:
        raise BackendError(
            f"Could not open a terminal on “{cluster.display_name}”: {exc}. Try again in a minute; if it keeps "
            "failing, tell your instructor."
        ) from None
    return ChannelTerminal(channel)
