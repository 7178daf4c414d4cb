"""An SFTP client over a local folder, for unit tests of sessions/files.py: the paramiko.SFTPClient calls the
Session makes, answered from this machine's file system as OpenSSH's sftp-server answers them (realpath for
normalize, stat following links, lstat not, and each listed entry's `ls -l` longname with its link count). It is
not a cluster and no test says it is; tests/integration/test_files.py speaks to the real sshd."""

from __future__ import annotations

import os
import stat
import time

import paramiko


def longname(path: str, name: str) -> str:
    """What OpenSSH's sftp-server writes for a listed entry (ls_file): mode, links, owner, group, size, date, name."""
    st = os.lstat(path)
    mode = stat.filemode(st.st_mode)
    when = time.strftime("%b %d %H:%M", time.localtime(st.st_mtime))
    return f"{mode} {st.st_nlink:>3} {st.st_uid:<8} {st.st_gid:<8} {st.st_size:>8} {when} {name}"


class LocalSFTP:
    def __init__(self, *, longnames: bool = True):
        self.longnames = longnames  # False: a server that sends no ls -l line

    def normalize(self, path: str) -> str:
        real = os.path.realpath(path)
        if not os.path.exists(os.path.dirname(real)):
            raise FileNotFoundError(path)
        return real

    def stat(self, path: str):
        return paramiko.SFTPAttributes.from_stat(os.stat(path))

    def lstat(self, path: str):
        return paramiko.SFTPAttributes.from_stat(os.lstat(path))

    def listdir_iter(self, path: str = ".", read_aheads: int = 50):
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            attrs = paramiko.SFTPAttributes.from_stat(os.lstat(full), name)
            if self.longnames:
                attrs.longname = longname(full, name)
            yield attrs

    def listdir_attr(self, path: str = "."):
        return list(self.listdir_iter(path))

    def open(self, path: str, mode: str = "r"):
        return _File(path, mode)

    def mkdir(self, path: str, mode: int = 0o777) -> None:
        os.mkdir(path, mode)

    def chmod(self, path: str, mode: int) -> None:
        os.chmod(path, mode)

    def posix_rename(self, old: str, new: str) -> None:
        os.rename(old, new)

    def remove(self, path: str) -> None:
        os.remove(path)

    def rmdir(self, path: str) -> None:
        os.rmdir(path)


class _File:
    """The parts of paramiko.SFTPFile a Session uses."""

    def __init__(self, path: str, mode: str):
        self.fh = open(path, mode.replace("b", "") + "b")  # noqa: SIM115  (closed by __exit__)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.fh.close()

    def prefetch(self, file_size=None) -> None:
        pass

    def set_pipelined(self, pipelined: bool = True) -> None:
        pass

    def seek(self, offset: int) -> None:
        self.fh.seek(offset)

    def read(self, size: int) -> bytes:
        return self.fh.read(size)

    def write(self, data: bytes) -> None:
        self.fh.write(data)
