"""SSH to cluster login nodes: pinned host keys, pooled connections, a fixed vocabulary of commands.

One paramiko connection per (cluster, account) per process, shared by every thread and task in it
(a Transport multiplexes channels) and rebuilt when it drops or when the account or host key changes.
Commands are argument lists joined with shlex.join: nothing a user typed reaches a shell unquoted.
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
import os
import posixpath
import shlex
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import paramiko
from django.conf import settings

from core import measurements

from .base import (
    AuthenticationFailed,
    BackendError,
    ClusterUnreachable,
    HostKeyMismatch,
    HostKeyNotPinned,
    LogChunk,
    complete_utf8,
)

logger = logging.getLogger(__name__)

_KEY_CLASSES = (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey)


class ServerRefused(BackendError):
    """The command meant to serve a channel (an SFTP server under sudo) exited at once, saying why."""


@dataclass(frozen=True)
class CommandResult:
    exit_status: int
    stdout: str
    stderr: str
    raw_stdout: bytes = b""  # as the command wrote it, for byte offsets into files

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def message(self) -> str:
        """The command's own words, for the user: stderr first, else stdout."""
        return (self.stderr.strip() or self.stdout.strip() or f"exit status {self.exit_status}")[:2000]


def fingerprint(host_key: str) -> str:
    """OpenSSH-style SHA256 fingerprint of an "ssh-ed25519 AAAA…" line."""
    try:
        blob = base64.b64decode(host_key.split()[1])
    except (IndexError, ValueError):
        return "(not a valid key)"
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _key_fingerprint(key: paramiko.PKey) -> str:
    return fingerprint(f"{key.get_name()} {key.get_base64()}")


def known_hosts_name(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


def probe_host_key(host: str, port: int) -> str:
    """The host key a server presents, as "type base64", without logging in. For pinning after confirmation."""
    try:
        with socket.create_connection((host, port), timeout=settings.GPULAB_SSH_CONNECT_TIMEOUT) as sock:
            transport = paramiko.Transport(sock)
            try:
                transport.start_client(timeout=settings.GPULAB_SSH_CONNECT_TIMEOUT)
                key = transport.get_remote_server_key()
                return f"{key.get_name()} {key.get_base64()}"
            finally:
                transport.close()
    except (OSError, paramiko.SSHException) as exc:
        raise ClusterUnreachable(
            f"Cannot reach {host}:{port}: {exc}. Check the host, the port and the firewall."
        ) from None


def load_private_key(text: str) -> paramiko.PKey:
    for key_class in _KEY_CLASSES:
        try:
            return key_class.from_private_key(io.StringIO(text))
        except (paramiko.SSHException, ValueError):
            continue
    raise AuthenticationFailed(
        "The stored SSH private key cannot be read (OpenSSH Ed25519, ECDSA or RSA without a passphrase expected)."
    )


class SSHPool:
    """Process-wide pool of authenticated connections; forked workers start with an empty one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: dict[tuple, paramiko.SSHClient] = {}
        self._key_locks: dict[tuple, threading.Lock] = {}
        self._pid = os.getpid()
        self.opened = 0  # connections opened by this process, for benchmarks and tests

    def _check_fork(self) -> None:
        if os.getpid() != self._pid:  # a forked child must not share the parent's sockets
            self._clients, self._key_locks, self._pid, self.opened = {}, {}, os.getpid(), 0
            self._lock = threading.Lock()

    @staticmethod
    def _pool_key(cluster, account) -> tuple:
        # Editing the host, pinned key or credential yields a new key, so a stale connection is never reused.
        return (cluster.pk, account.pk, cluster.host, cluster.port, cluster.host_key, account.secret_encrypted)

    def client(self, cluster, account) -> paramiko.SSHClient:
        self._check_fork()
        key = self._pool_key(cluster, account)
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # one connect per key at a time; others wait and reuse it
            client = self._clients.get(key)
            transport = client.get_transport() if client else None
            if client is not None and transport is not None and transport.is_active():
                return client
            self._drop_stale(cluster.pk, account.pk)
            client = connect(cluster, account)
            with self._lock:
                self._clients[key] = client
                self.opened += 1
            return client

    def size(self) -> int:
        self._check_fork()
        return len(self._clients)

    def _drop_stale(self, cluster_pk, account_pk) -> None:
        with self._lock:
            stale = [k for k in self._clients if k[0] == cluster_pk and k[1] == account_pk]
            for k in stale:
                self._clients.pop(k).close()

    def discard(self, cluster, account) -> None:
        with self._lock:
            client = self._clients.pop(self._pool_key(cluster, account), None)
        if client is not None:
            client.close()


pool = SSHPool()


def report_pool_size() -> None:
    """This process's open SSH connections, for /metrics (summed over the portal's processes)."""
    measurements.set_process_gauge("ssh_pool_connections", pool.size())


def require_pinned(cluster) -> None:
    """No connection to a cluster whose host key an admin has not pinned."""
    if not cluster.host_key.strip():
        raise HostKeyNotPinned(
            f"The cluster “{cluster.display_name}” has no pinned SSH host key. An admin must open the cluster in the "
            "admin, run Test connection and confirm the fingerprint."
        )


def connect(cluster, account) -> paramiko.SSHClient:
    """A new authenticated connection, outside the pool: for long-lived streams that own their connection.

    `cluster` needs host, port, host_key and display_name: a Cluster, or a compute node that stands in for one.
    """
    require_pinned(cluster)
    keytype, _, rest = cluster.host_key.strip().partition(" ")
    try:
        pinned = paramiko.PKey.from_type_string(keytype, base64.b64decode(rest.split()[0]))
    except (ValueError, IndexError, paramiko.SSHException):
        raise HostKeyMismatch(f"The pinned host key of “{cluster.display_name}” is not a valid SSH key.") from None
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.get_host_keys().add(known_hosts_name(cluster.host, cluster.port), keytype, pinned)
    secret = account.secret()
    credentials = {"password": secret} if account.auth_method == "password" else {"pkey": load_private_key(secret)}
    timeout = settings.GPULAB_SSH_CONNECT_TIMEOUT
    try:
        client.connect(
            cluster.host,
            port=cluster.port,
            username=account.username,
            timeout=timeout,
            banner_timeout=timeout,
            auth_timeout=timeout,
            allow_agent=False,
            look_for_keys=False,
            **credentials,
        )
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise HostKeyMismatch(
            f"Refusing to connect to “{cluster.display_name}”: its SSH host key is {_key_fingerprint(exc.key)}, "
            f"but the pinned key is {fingerprint(cluster.host_key)}. If the cluster's key was changed on purpose, an "
            "admin must pin the new one with Test connection; otherwise someone may be intercepting the connection."
        ) from None
    except paramiko.AuthenticationException:
        client.close()
        raise AuthenticationFailed(
            f"The cluster “{cluster.display_name}” refused the login {account.username}: check the account's "
            "SSH key or password."
        ) from None
    except paramiko.SSHException as exc:
        client.close()
        if "not found in known_hosts" in str(exc):
            raise HostKeyMismatch(
                f"Refusing to connect to “{cluster.display_name}”: it did not offer the pinned host key "
                f"({fingerprint(cluster.host_key)}). An admin must check the cluster and re-pin its key."
            ) from None
        raise ClusterUnreachable(f"SSH to “{cluster.display_name}” failed: {exc}.") from None
    except (OSError, EOFError) as exc:
        client.close()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        raise ClusterUnreachable(
            f"Cannot reach “{cluster.display_name}” at {cluster.host}:{cluster.port} ({reason}). "
            "The cluster may be down; the portal keeps trying."
        ) from None
    logger.info("ssh: connected to %s as %s", cluster.display_name, account.username)
    return client


def run(cluster, account, argv: list[str], *, timeout: float | None = None, stdin: str = "") -> CommandResult:
    """Run one command from the vocabulary on the login node, with `stdin` as its standard input. Retries once on a
    dropped pooled connection."""
    command = shlex.join(argv)
    timeout = timeout or settings.GPULAB_SSH_COMMAND_TIMEOUT
    for attempt in (1, 2):
        client = pool.client(cluster, account)
        try:
            given, stdout, stderr = client.exec_command(command, timeout=timeout)
            if stdin:
                given.write(stdin)
            given.channel.shutdown_write()  # end of input: a command reading it does not wait for more
            raw = stdout.read()
            err = stderr.read().decode(errors="replace")
            return CommandResult(stdout.channel.recv_exit_status(), raw.decode(errors="replace"), err, raw)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            pool.discard(cluster, account)
            if attempt == 2:
                raise ClusterUnreachable(f"Lost the SSH connection to “{cluster.display_name}”: {exc}.") from None
    raise BackendError("unreachable")  # pragma: no cover


def transport(client: paramiko.SSHClient) -> paramiko.Transport:
    """The client's connection; SSHException when it was closed meanwhile (another thread dropped it from the pool)."""
    found = client.get_transport()
    if found is None:
        raise paramiko.SSHException("the SSH connection was closed")
    return found


def _open_sftp(client: paramiko.SSHClient, server: list[str] | None) -> paramiko.SFTPClient:
    if server is None:
        return client.open_sftp()  # the login's own SFTP subsystem
    channel = transport(client).open_session(timeout=settings.GPULAB_SSH_CONNECT_TIMEOUT)
    channel.exec_command(shlex.join(server))  # an SFTP server run as another user (sudo … sftp-server)
    try:
        return paramiko.SFTPClient(channel)
    except (paramiko.SSHException, EOFError):
        said = channel.recv_stderr(4096).decode(errors="replace").strip() if channel.recv_stderr_ready() else ""
        channel.close()
        if said:  # the command itself refused (sudo's rule): the connection is fine, so no retry
            raise ServerRefused(said[:2000]) from None
        raise


@contextmanager
def sftp(cluster, account, *, server: list[str] | None = None) -> Iterator[paramiko.SFTPClient]:
    """An SFTP channel as `account`; with `server`, speaking to that command (from the vocabulary) instead."""
    try:
        channel = _open_sftp(pool.client(cluster, account), server)
    except (paramiko.SSHException, OSError, EOFError):
        pool.discard(cluster, account)
        try:
            channel = _open_sftp(pool.client(cluster, account), server)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ClusterUnreachable(f"SFTP to “{cluster.display_name}” failed: {exc}.") from None
    try:
        yield channel
    finally:
        channel.close()


def read_log_chunk(sftp, path: str, offset: int, limit: int) -> LogChunk:
    """Up to `limit` bytes of a log from `offset`, cut on a whole character; past the end it says where the end is."""
    try:
        size = sftp.stat(path).st_size or 0
    except FileNotFoundError:
        return LogChunk(offset=0, data="", eof=True, exists=False)
    if offset >= size:  # at or past the end (or the file was truncated)
        return LogChunk(offset=size, data="", eof=True)
    with sftp.open(path, "rb") as fh:
        fh.seek(offset)
        raw = complete_utf8(fh.read(min(limit, size - offset)))
    next_offset = offset + len(raw)
    return LogChunk(offset=next_offset, data=raw.decode("utf-8", errors="replace"), eof=next_offset >= size)


# The staged lab files (trainer, examples) are code every student's job runs: readable by all where a lab directory
# is shared by students' own users.
STAGED_DIR_MODE = 0o755
# Virtual environments, caches, tests and training output stay on the portal's side, as do hidden files.
SKIP_STAGING = {"__pycache__", "runs", "tests"}


def put_lab_files(sftp, source: Path, remote: Callable[..., str]) -> int:
    """Copy the lab files under `source` to `remote(*relative parts)`, keeping the executable bit; how many copied."""
    makedirs(sftp, remote(), mode=STAGED_DIR_MODE)
    copied = 0
    for local in sorted(source.rglob("*")):
        relative = local.relative_to(source)
        if any(part.startswith(".") or part in SKIP_STAGING for part in relative.parts):
            continue
        target = remote(*relative.parts)
        if local.is_dir():
            makedirs(sftp, target, mode=STAGED_DIR_MODE)
        elif local.is_file() and local.suffix != ".pyc":
            sftp.put(str(local), target)
            sftp.chmod(target, 0o755 if local.stat().st_mode & stat.S_IXUSR else 0o644)
            copied += 1
    return copied


def makedirs(sftp, path: str, *, mode: int = 0o750) -> None:
    """`mkdir -p` over SFTP, each new directory private to the account (0750) unless `mode` says otherwise."""
    current = "/" if path.startswith("/") else ""
    for part in [p for p in path.split("/") if p]:
        current = posixpath.join(current, part) if current else part
        try:
            sftp.stat(current)
        except FileNotFoundError:
            sftp.mkdir(current, mode=mode)
