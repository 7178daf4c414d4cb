"""A terminal on a cluster: an SSH channel with a PTY running one fixed command, for the portal to relay.

Invariant: the command is an argument list chosen by the kind (e.g. `srun --jobid=<id> --overlap --pty bash -l`),
joined with shlex.join; only keystrokes typed into the PTY come from the user. The channel rides the pooled
connection of the identity the job runs as (clusters/backends/ssh.py); closing a terminal closes its channel only.
"""

from __future__ import annotations

import contextlib
import shlex
import socket

import paramiko

from . import as_student, ssh
from .base import BackendError
from .sudo_rule import TERMINAL_SRUN

TERM = "xterm-256color"  # what xterm.js understands


class Terminal:
    """One PTY channel. read() is non-blocking once fileno() is readable; b"" with ended=True means it closed."""

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
        self.channel.resize_pty(width=max(2, min(cols, 1000)), height=max(2, min(rows, 500)))

    def close(self) -> None:
        self.channel.close()


def open_terminal(cluster, login, argv: list[str], *, cols: int, rows: int) -> Terminal:
    """Run `argv` under a PTY as `login` (a ClusterAccount the portal signs in with)."""
    try:
        transport = ssh.pool.client(cluster, login).get_transport()
        with contextlib.suppress(OSError, AttributeError):  # keystrokes go out at once, not batched by Nagle
            transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        channel = transport.open_session(timeout=15)
        channel.get_pty(term=TERM, width=max(2, min(cols, 1000)), height=max(2, min(rows, 500)))
        channel.exec_command(shlex.join(argv))
    except (OSError, paramiko.SSHException) as exc:
        raise BackendError(
            f"Could not open a terminal on “{cluster.display_name}”: {exc}. Try again in a minute; if it keeps "
            "failing, tell your instructor."
        ) from None
    return Terminal(channel)


def srun_in_job(cluster, account, scheduler_id: str, *, cols: int, rows: int) -> Terminal:
    """A login shell in a running SLURM job as `account`: its own login, or the student's user through the service
    account's sudo rule (which allows exactly this srun)."""
    argv = ["srun", f"--jobid={scheduler_id}", *TERMINAL_SRUN]
    student = as_student.for_account(cluster, account)
    login = account
    if student:
        login, argv = student.login, student.as_student(argv)
    return open_terminal(cluster, login, argv, cols=cols, rows=rows)
