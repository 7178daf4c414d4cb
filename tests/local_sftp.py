"""An SFTP channel over this machine's file system, for unit tests of the file browser (sessions/files.py) that need
real folders, modes, symlinks and hard links but no cluster: the paramiko.SFTPClient calls a Session makes, answered
with os calls as OpenSSH's sftp-server answers them (realpath for normalize, stat following links, lstat not, and each
listed entry's `ls -l` longname with its link count). Relative paths lie under `home`, as an SFTP server started in
the login's home resolves them; absolute paths are used as they are. It is not a cluster and no test says it is:
the real channel is tests/integration/test_files.py's."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko


def longname(path: str, name: str) -> str:
    """What OpenSSH's sftp-server writes for a listed entry (ls_file): mode, links, owner, group, size, date, name."""
    st = os.lstat(path)
    mode = stat.filemode(st.st_mode)
    when = time.strftime("%b %d %H:%M", time.localtime(st.st_mtime))
    return f"{mode} {st.st_nlink:>3} {st.st_uid:<8} {st.st_gid:<8} {st.st_size:>8} {when} {name}"


class LocalSFTP:
    def __init__(self, home: Path | str = "/", *, longnames: bool = True):
        self.home = home
        self.longnames = longnames  # False: a server that sends no ls -l line
        self.closed = threading.Event()
        self.calls = 0  # what the channel was asked, for tests that count round trips

    def _path(self, path: str) -> str:
        """Every call comes through here: counted, and refused once the channel is closed, as paramiko's are."""
        self.calls += 1
        if self.closed.is_set():
            raise OSError("Socket is closed")
        return os.path.join(self.home, path) if not path.startswith("/") else path

    def normalize(self, path: str) -> str:
        real = os.path.realpath(self._path(path))
        if not os.path.exists(os.path.dirname(real)):  # sftp-server's realpath allows a missing last part only
            raise FileNotFoundError(path)
        return real

    def stat(self, path: str) -> paramiko.SFTPAttributes:
        return paramiko.SFTPAttributes.from_stat(os.stat(self._path(path)))

    def lstat(self, path: str) -> paramiko.SFTPAttributes:
        return paramiko.SFTPAttributes.from_stat(os.lstat(self._path(path)))

    def listdir_attr(self, path: str = ".") -> list[paramiko.SFTPAttributes]:
        folder = self._path(path)
        listed = []
        for name in sorted(os.listdir(folder)):
            full = os.path.join(folder, name)
            attrs = paramiko.SFTPAttributes.from_stat(os.lstat(full), name)
            if self.longnames:
                attrs.longname = longname(full, name)
            listed.append(attrs)
        return listed

    def listdir_iter(self, path: str = ".", read_aheads: int = 50) -> Iterator[paramiko.SFTPAttributes]:
        return iter(self.listdir_attr(path))

    def open(self, path: str, mode: str = "r") -> _File:
        return _File(self._path(path), mode)

    def mkdir(self, path: str, mode: int = 0o777) -> None:
        os.mkdir(self._path(path), mode)

    def chmod(self, path: str, mode: int) -> None:
        os.chmod(self._path(path), mode)

    def posix_rename(self, old: str, new: str) -> None:
        os.rename(self._path(old), self._path(new))

    def remove(self, path: str) -> None:
        os.remove(self._path(path))

    def rmdir(self, path: str) -> None:
        os.rmdir(self._path(path))

    def close(self) -> None:
        self.closed.set()


class _File:
    """The parts of paramiko.SFTPFile a Session uses."""

    def __init__(self, path: str, mode: str):
        self.fh = open(path, mode.replace("b", "") + "b")  # noqa: SIM115  (closed by __exit__)

    def __enter__(self) -> _File:
        return self

    def __exit__(self, *exc) -> None:
        self.fh.close()

    def prefetch(self, file_size: int | None = None) -> None:
        pass

    def set_pipelined(self, pipelined: bool = True) -> None:
        pass

    def seek(self, offset: int) -> None:
        self.fh.seek(offset)

    def tell(self) -> int:
        return self.fh.tell()

    def read(self, size: int = -1) -> bytes:
        return self.fh.read(size)

    def write(self, data: bytes) -> None:
        self.fh.write(data)

    def close(self) -> None:
        self.fh.close()


def opened_locally(home: Path):
    """A stand-in for sessions.files.opened: a Session on the space over this machine's file system under `home`."""
    from sessions.files import Session

    @contextlib.contextmanager
    def opened(space):
        sftp = LocalSFTP(home)
        try:
            yield Session(space, sftp)
        finally:
            sftp.close()

    return opened
