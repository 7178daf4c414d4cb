"""An SFTP channel over this machine's file system, for unit tests of the file browser (sessions/files.py) that need
real folders, modes and symlinks but no cluster: the SFTP client methods the browser calls, answered with os calls,
relative paths under `home` as an SFTP server started in the login's home resolves them. It is not SFTP: the real
channel is tests/integration/test_files.py's."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import paramiko


class LocalSftp:
    def __init__(self, home: Path):
        self.home = home
        self.closed = threading.Event()
        self.calls = 0  # what the channel was asked, for tests that count round trips

    def _path(self, path: str) -> str:
        self.calls += 1
        return os.path.join(self.home, path) if not path.startswith("/") else path

    def normalize(self, path: str) -> str:
        real = os.path.realpath(self._path(path))
        if not os.path.lexists(real):
            raise FileNotFoundError(path)
        return real

    def stat(self, path: str) -> paramiko.SFTPAttributes:
        return paramiko.SFTPAttributes.from_stat(os.stat(self._path(path)))

    def lstat(self, path: str) -> paramiko.SFTPAttributes:
        return paramiko.SFTPAttributes.from_stat(os.lstat(self._path(path)))

    def listdir_attr(self, path: str) -> list[paramiko.SFTPAttributes]:
        folder = self._path(path)
        if self.closed.is_set():
            raise OSError("Socket is closed")
        return [
            paramiko.SFTPAttributes.from_stat(os.lstat(os.path.join(folder, name)), name)
            for name in sorted(os.listdir(folder))
        ]

    def mkdir(self, path: str, mode: int = 0o777) -> None:
        os.mkdir(self._path(path), mode)

    def chmod(self, path: str, mode: int) -> None:
        os.chmod(self._path(path), mode)

    def posix_rename(self, source: str, target: str) -> None:
        os.rename(self._path(source), self._path(target))

    def remove(self, path: str) -> None:
        os.remove(self._path(path))

    def rmdir(self, path: str) -> None:
        os.rmdir(self._path(path))

    def open(self, path: str, mode: str = "r"):
        return _File(open(self._path(path), mode.replace("b", "") + "b"))  # closed by its user

    def close(self) -> None:
        self.closed.set()


class _File:
    def __init__(self, fh):
        self.fh = fh

    def __getattr__(self, name):
        return getattr(self.fh, name)

    def prefetch(self, *args) -> None:
        pass

    def set_pipelined(self, *args) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()


def opened_locally(home: Path):
    """A stand-in for sessions.files.opened: a Session on the space over this machine's file system under `home`."""
    from sessions.files import Session

    @contextlib.contextmanager
    def opened(space):
        sftp = LocalSftp(home)
        try:
            yield Session(space, sftp)
        finally:
            sftp.close()

    return opened
