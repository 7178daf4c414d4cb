"""The student's files on a cluster, over SFTP on the pooled SSH connection of the identity they belong to.

Invariant: every path a request names is cleaned by sessions/paths.py, then resolved on the cluster (symlinks
followed by the server's realpath) and used only when the result is the space's root or under it and is a regular
file or a folder: a symlink leading out, a device, a FIFO or a socket is refused, and so is a JupyterLab session's
secret, in every listing, download, view, archive and rename (sessions/secret_files.py). A regular file is read
(download, view, archive) only when it has one name: a hard link has no "outside" a path could show, so a file with
other names may be someone else's, linked in. SFTP's attributes carry no link count; the directory listing's `ls -l`
line (the longname OpenSSH's sftp-server sends with each entry) does, and a file whose count cannot be read is not read
either. A space is one of:
- the student's lab space on a cluster: as their own registered account or their own user (through the service
  account's sudo rule, which runs the login node's sftp-server as them), the cluster's lab directory in their home
  (`<lab directory>/students/<user>` when it is a shared absolute path); under the shared service account,
  `<lab directory>/students/user-<id>`, private to them in the portal (0700);
- a job's run directory (`<lab directory>/jobs/<job id>`), as the identity the job ran as.
"""

from __future__ import annotations

import io
import logging
import posixpath
import stat
import tarfile
import time
import zipfile
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import paramiko
from django.conf import settings

from clusters import kinds
from clusters.backends import as_student, openssh, ssh
from clusters.backends.as_student import StudentShell
from clusters.backends.base import BackendError
from clusters.identity import IdentityMissing, account_for
from clusters.lab_space import files_subdir
from clusters.models import Cluster, ClusterAccount

from . import paths, secret_files
from .paths import PathRefused

logger = logging.getLogger(__name__)

PARTIAL_SUFFIX = ".gpulab-upload"  # an upload in progress: `.<name>.gpulab-upload` beside where it will land
ZIP_EPOCH = 315532800  # 1980-01-01: zip cannot record earlier times
READ_WINDOW = 16 * 2**20  # read ahead by SFTP: throughput without holding a whole file in memory
# From this size a download is read by OpenSSH's client: a new login (0.2 s on the test machine), then C all the way.
# Below it the pooled SFTP connection, already signed in, finishes first (bench/files.py at 16 and 64 MB).
OPENSSH_FROM_BYTES = 64 * 2**20


class FilesUnavailable(Exception):
    """Files cannot be reached on this cluster or for this job; the message says why and what to do."""


@dataclass
class Space:
    cluster: Cluster
    account: ClusterAccount
    root: str  # as configured (may be relative to the login's home); resolved once opened
    title: str
    confine: bool = False  # the space's root is made private to the account (0700) when it is opened
    create: bool = False  # made on first use (the student's lab space; never a job's run directory)
    student: StudentShell | None = None  # jobs run as the student's user: SFTP as them, through the sudo rule


@dataclass
class Entry:
    name: str
    path: str  # relative to the space's root
    kind: str  # "dir", "file", "link-out" (a symlink leading out), "linked" (a hard link), "other": listed, not opened
    size: int
    mtime: float

    @property
    def shown(self) -> str:
        """The name as pages show it (Unicode direction controls written out: sessions/paths.py)."""
        return paths.shown(self.name)

    @property
    def changed(self) -> datetime:
        return datetime.fromtimestamp(self.mtime, tz=UTC)

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"

    @property
    def is_file(self) -> bool:
        return self.kind == "file"


@dataclass(frozen=True)
class FolderWalk:
    """A folder listed whole for an archive (Session.walk), before anything streams."""

    top: str  # the folder's name: the archive's top folder
    files: list[tuple[str, str, paramiko.SFTPAttributes]]  # (absolute path, path inside the archive, attributes)
    left_out: list[str]  # paths inside the archive of hard-linked files, named in its LEFT-OUT.txt


def link_count(attrs) -> int | None:
    """How many names a listed file has, from its `ls -l` line ("-rw-r--r--    2 user group ..."); None if the
    server sent none that reads so (then the file is treated as one that may have others)."""
    fields = (getattr(attrs, "longname", None) or "").split(None, 2)
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def _one_name(attrs) -> bool:
    return link_count(attrs) == 1


def hard_link_refusal(name: str, count: int | None) -> str:
    many = f"{count} names" if count else "other names, or the cluster would not say how many"
    return (
        f"“{paths.shown(name)}” has {many} on the cluster (a hard link): it may be another person's file linked "
        "into this folder, so the portal does not open it. Copy it on the cluster (cp) and open the copy."
    )


def _lab(cluster) -> str:
    """The lab directory as SFTP sees it: "~/x" relative to the login's home."""
    base = cluster.lab_dir.strip() or "~/gpulab"
    if base == "~":
        return "."
    return base[2:] if base.startswith("~/") else base


def _check_kind(cluster) -> None:
    kind = kinds.kind_of(cluster.kind)
    if not kind.files_over_sftp or not cluster.host:
        raise FilesUnavailable(
            f"Files are not available on “{cluster.display_name}”: the portal reaches files only on clusters with "
            "an SSH login node. Keep data in your job's image or a volume your instructor provides."
        )


def _check_account(cluster, account: ClusterAccount | None) -> ClusterAccount:
    if account is None:
        raise FilesUnavailable(f"“{cluster.display_name}” has no service account yet: an admin must add one.")
    return account


def _student_of(cluster, account):
    """The student's user reached through the service account's sudo rule, or None (the account signs in itself)."""
    try:
        return as_student.for_account(cluster, account)
    except BackendError as exc:
        raise FilesUnavailable(str(exc)) from None


def home_space(cluster, user) -> Space:
    """The user's own lab space on `cluster`."""
    _check_kind(cluster)
    try:
        account = account_for(cluster, user)
    except IdentityMissing as exc:  # its message says what to do
        raise FilesUnavailable(str(exc)) from None
    account = _check_account(cluster, account)
    title = f"Your files on {cluster.display_name}"
    student = _student_of(cluster, account)
    subdir = files_subdir(cluster, account, user)
    root = posixpath.join(_lab(cluster), subdir) if subdir else _lab(cluster)
    # Private to its owner (0700): their own folder, or the lab directory in their home (never a shared absolute one).
    confine = bool(subdir) or not posixpath.isabs(root)
    return Space(cluster, account, root, title, confine=confine, create=True, student=student)


def job_space(job) -> Space:
    """The run directory of `job`, as the identity it ran as."""
    _check_kind(job.cluster)
    account = job.account or job.cluster.service_account()
    account = _check_account(job.cluster, account)
    root = posixpath.join(_lab(job.cluster), "jobs", str(job.pk))
    student = _student_of(job.cluster, account)
    return Space(job.cluster, account, root, f"Run directory of job {job.short_id}", student=student)


class Session:
    """One SFTP channel on a space; every method takes a relative path from a request."""

    def __init__(self, space: Space, sftp):
        self.space, self.sftp = space, sftp
        self.root = self._open_root()

    def _open_root(self) -> str:
        try:
            if self.space.create:
                ssh.makedirs(self.sftp, self.space.root)
            if self.space.confine:
                self._make_private()
            return self.sftp.normalize(self.space.root)
        except FileNotFoundError:
            # A job's run directory not made yet (pending) or cleaned since: the callers say which in words.
            raise FileNotFoundError(self.space.root) from None

    def _make_private(self) -> None:
        """0700, or refused in words: a folder there that the account cannot chmod is not its own. Under a shared lab
        directory (1733) another student can make `students/<user>` first, to read what the portal would put in it."""
        try:
            self.sftp.chmod(self.space.root, 0o700)
        except PermissionError:
            logger.warning("files: %s is not %s's own; refused", self.space.root, self.space.account.username)
            raise PathRefused(
                f"Your files folder on {self.space.cluster.display_name} ({self.space.root}) was made by another "
                "account, so the portal does not use it. Ask the cluster's admin to remove it; nothing was written "
                "there."
            ) from None

    # -- resolution -------------------------------------------------------------------------------------------
    def resolve(self, relative: str) -> tuple[str, paramiko.SFTPAttributes]:
        """(absolute path, attributes) of an existing file or folder in the space; PathRefused otherwise."""
        target = paths.join(self.root, paths.clean(relative))
        if secret_files.is_secret(relative):
            raise PathRefused(secret_files.REFUSAL)
        try:
            real = self.sftp.normalize(target)
        except FileNotFoundError:
            raise FileNotFoundError(relative) from None
        if not paths.inside(self.root, real):
            raise PathRefused("That path leads outside your space (through a symbolic link); it cannot be opened.")
        try:
            attrs = self.sftp.stat(real)
        except FileNotFoundError:  # sshd normalizes a path whose last part is missing; stat is what finds out
            raise FileNotFoundError(relative) from None
        mode = attrs.st_mode or 0
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise PathRefused("That is not a regular file or a folder (a device, a pipe or a socket).")
        if secret_files.is_secret(real[len(self.root) :], attrs.st_mode):  # by its own name, through a link too
            raise PathRefused(secret_files.REFUSAL)
        return real, attrs

    def resolve_dir(self, relative: str) -> str:
        real, attrs = self.resolve(relative)
        if not stat.S_ISDIR(attrs.st_mode or 0):
            raise PathRefused("That is a file, not a folder.")
        return real

    def resolve_file(self, relative: str) -> tuple[str, paramiko.SFTPAttributes]:
        """(absolute path, attributes) of a regular file with one name, to read; PathRefused otherwise."""
        real, attrs = self.resolve(relative)
        if not stat.S_ISREG(attrs.st_mode or 0):
            raise PathRefused("That is a folder: download it as a .zip or .tar instead.")
        count = self._link_count(real)
        if count != 1:
            raise PathRefused(hard_link_refusal(posixpath.basename(real), count))
        return real, attrs

    def _link_count(self, real: str) -> int | None:
        """The resolved file's link count, from its folder's listing (stat over SFTP does not carry it)."""
        folder, name = posixpath.split(real)
        for attrs in self.sftp.listdir_iter(folder or "/"):
            if attrs.filename == name:
                return link_count(attrs)
        return None

    def _kind_of(self, folder: str, attrs) -> str:
        mode = attrs.st_mode or 0
        if stat.S_ISDIR(mode):
            return "dir"
        if stat.S_ISREG(mode):
            return "file" if _one_name(attrs) else "linked"
        if stat.S_ISLNK(mode):
            try:
                real = self.sftp.normalize(posixpath.join(folder, attrs.filename))
                target = self.sftp.stat(real)
            except OSError:
                return "link-out"  # dangling: nothing to open
            if paths.inside(self.root, real) and (stat.S_ISREG(target.st_mode) or stat.S_ISDIR(target.st_mode)):
                return "dir" if stat.S_ISDIR(target.st_mode) else "file"
            return "link-out"
        return "other"

    # -- reading ----------------------------------------------------------------------------------------------
    def listing(self, relative: str) -> list[Entry]:
        relative = paths.clean(relative)
        folder = self.resolve_dir(relative)
        entries = []
        for attrs in self.sftp.listdir_attr(folder):
            if attrs.filename.endswith(PARTIAL_SUFFIX) or secret_files.is_secret(attrs.filename, attrs.st_mode):
                continue  # an upload still in progress, or a session's secret
            kind = self._kind_of(folder, attrs)
            child = posixpath.join(relative, attrs.filename) if relative else attrs.filename
            entries.append(Entry(attrs.filename, child, kind, attrs.st_size or 0, attrs.st_mtime or 0))
        entries.sort(key=lambda e: (not e.is_dir, e.name.lower()))
        return entries

    def read_range(self, real: str, start: int, length: int) -> Iterator[bytes]:
        """The bytes [start, start+length) of a resolved file, 1 MiB at a time. paramiko prefetches one window
        ahead of what is handed on, so the cluster keeps sending while the browser receives; at most two windows
        (READ_WINDOW each) are held, whatever the file's size and however slow the browser."""
        end = start + length
        with self.sftp.open(real, "rb") as fh:
            position, asked = start, start
            while position < end:
                if asked < end and asked - position <= READ_WINDOW:
                    fh.seek(asked)
                    fh.prefetch(min(asked + READ_WINDOW, end))  # requests [asked, asked + window)
                    asked = min(asked + READ_WINDOW, end)
                    fh.seek(position)
                data = fh.read(min(1 << 20, end - position))
                if not data:
                    return  # the file shrank while it was read
                position += len(data)
                yield data

    def text(self, relative: str, *, tail: bool) -> tuple[str, int, bool]:
        """(text, file size, cut) of a text file: its first or last GPULAB_FILES_VIEW_BYTES."""
        real, attrs = self.resolve_file(relative)
        size, cap = attrs.st_size or 0, settings.GPULAB_FILES_VIEW_BYTES
        start = max(0, size - cap) if tail else 0
        data = b"".join(self.read_range(real, start, min(cap, size - start)))
        if b"\0" in data[:8192]:
            raise PathRefused("This looks like a binary file: download it instead.")
        return data.decode("utf-8", errors="replace"), size, size > cap

    def walk(self, relative: str) -> FolderWalk:
        """Each regular file under a folder, links not followed, to archive: the whole listing, made before an archive
        starts to stream. A session's secrets are skipped unnamed; hard-linked files are left out and named in
        `left_out`. FilesUnavailable, in words, as soon as it counts more than GPULAB_FILES_ARCHIVE_MAX_ENTRIES entries
        (folders, files and the rest) or files to archive of more than GPULAB_FILES_ARCHIVE_MAX_BYTES."""
        top = self.resolve_dir(relative)
        base = posixpath.basename(top) or "files"
        pending, entries, size = [(top, base)], 0, 0
        files: list[tuple[str, str, paramiko.SFTPAttributes]] = []
        left_out: list[str] = []
        while pending:
            folder, inner = pending.pop()
            listed = self.sftp.listdir_attr(folder)
            entries += len(listed)
            for attrs in listed:
                mode = attrs.st_mode or 0
                path, name = posixpath.join(folder, attrs.filename), f"{inner}/{attrs.filename}"
                if secret_files.is_secret(attrs.filename, mode):
                    continue
                if stat.S_ISDIR(mode):
                    pending.append((path, name))
                elif stat.S_ISREG(mode) and not attrs.filename.endswith(PARTIAL_SUFFIX):
                    if not _one_name(attrs):
                        left_out.append(name)
                        continue
                    size += attrs.st_size or 0
                    files.append((path, name, attrs))
            _check_archive_limits(entries, size)
        return FolderWalk(top=base, files=files, left_out=left_out)

    # -- changing ---------------------------------------------------------------------------------------------
    def _new_path(self, folder_relative: str, name: str) -> str:
        folder = self.resolve_dir(folder_relative)
        return posixpath.join(folder, paths.check_name(name))

    def _exists(self, path: str):
        try:
            return self.sftp.lstat(path)
        except FileNotFoundError:
            return None

    def mkdir(self, folder_relative: str, name: str) -> None:
        path = self._new_path(folder_relative, name)
        if self._exists(path):
            raise PathRefused(f"“{name}” already exists here.")
        self.sftp.mkdir(path, mode=0o700)  # private to its owner, as every folder the portal makes

    def rename(self, relative: str, new_name: str) -> str:
        relative = paths.clean(relative)
        if not relative:
            raise PathRefused("The top folder of your space cannot be renamed.")
        parent = self.resolve_dir(paths.parent(relative))
        source = posixpath.join(parent, posixpath.basename(relative))
        found = self._exists(source)
        if found is None:
            raise FileNotFoundError(relative)
        if secret_files.is_secret(relative, found.st_mode) or secret_files.is_secret(new_name):
            raise PathRefused(secret_files.REFUSAL)  # renamed, it would be served under another name
        target = posixpath.join(parent, paths.check_name(new_name))
        if self._exists(target):
            raise PathRefused(f"“{new_name}” already exists here: pick another name or delete it first.")
        self.sftp.posix_rename(source, target)  # a symlink is renamed itself, its target untouched
        return posixpath.join(paths.parent(relative), new_name) if paths.parent(relative) else new_name

    def delete(self, relative: str) -> None:
        relative = paths.clean(relative)
        if not relative:
            raise PathRefused("The top folder of your space cannot be deleted.")
        parent = self.resolve_dir(paths.parent(relative))
        path = posixpath.join(parent, posixpath.basename(relative))
        attrs = self._exists(path)
        if attrs is None:
            raise FileNotFoundError(relative)
        self._remove(path, attrs)

    def _remove(self, path: str, attrs) -> None:
        if stat.S_ISDIR(attrs.st_mode or 0):  # lstat: a symlink to a folder is removed as a link, never entered
            for child in self.sftp.listdir_attr(path):
                self._remove(posixpath.join(path, child.filename), child)
            self.sftp.rmdir(path)
        else:
            self.sftp.remove(path)

    def upload_offset(self, folder_relative: str, name: str) -> int:
        """How many bytes of `name` have arrived (an interrupted upload resumes from there)."""
        partial = self._new_path(folder_relative, f".{paths.check_name(name)}{PARTIAL_SUFFIX}")
        attrs = self._exists(partial)
        return attrs.st_size or 0 if attrs is not None and stat.S_ISREG(attrs.st_mode) else 0

    def upload_chunk(self, folder_relative: str, name: str, total: int, offset: int, body) -> int:
        """Write one chunk at `offset` of the file `name` (`total` bytes in all); the file appears under its name
        once complete. Returns the bytes now received; a chunk at the wrong offset changes nothing."""
        if total > settings.GPULAB_FILES_MAX_UPLOAD_BYTES:
            raise PathRefused(
                f"Files up to {settings.GPULAB_FILES_MAX_UPLOAD_BYTES // 2**20} MiB can be uploaded here; put larger "
                "data on the cluster from a job, or ask your instructor."
            )
        final = self._new_path(folder_relative, name)
        partial = posixpath.join(posixpath.dirname(final), f".{name}{PARTIAL_SUFFIX}")
        existing = self._exists(partial)
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            self.sftp.remove(partial)  # a symlink planted in the partial's place is never written through
            existing = None
        have = (existing.st_size or 0) if existing is not None else 0
        if offset != have and offset != 0:
            return have
        target_attrs = self._exists(final)
        if target_attrs is not None and stat.S_ISDIR(target_attrs.st_mode):
            raise PathRefused(f"A folder named “{name}” is already here.")
        received = offset
        with self.sftp.open(partial, "wb" if offset == 0 else "r+b") as fh:
            if offset == 0:
                fh.chmod(0o600)  # an upload is its owner's alone, whatever the server's umask
            fh.set_pipelined(True)
            fh.seek(offset)
            while received < total:
                data = body.read(min(1 << 20, total - received))
                if not data:
                    break
                fh.write(data)
                received += len(data)
        if received >= total:
            self.sftp.posix_rename(partial, final)
        return received


def openssh_range(space: Space, real: str, start: int, length: int) -> Callable[[], AsyncGenerator[bytes, None]] | None:
    """The bytes [start, start+length) of a file resolved by a Session, read by `dd` as the space's identity through
    OpenSSH's client; None where the pooled SFTP connection is the way (a small range, a password login, no ssh).
    dd refuses to follow a link in the last part of the path, in case one replaced the file since it was resolved."""
    login = space.student.login if space.student else space.account
    if length < OPENSSH_FROM_BYTES or not openssh.usable(login):
        return None
    argv = ["dd", f"if={real}", "iflag=skip_bytes,count_bytes,nofollow", f"skip={start}", f"count={length}"]
    argv += ["bs=1M", "status=none"]
    if space.student:
        argv = space.student.as_student(argv)
    return lambda: openssh.output(space.cluster, login, argv)


@contextmanager
def opened(space: Space) -> Iterator[Session]:
    """A session on `space`; cluster failures become FilesUnavailable with the cluster's own words."""
    try:
        channel = space.student.sftp() if space.student else ssh.sftp(space.cluster, space.account)
        with channel as sftp:
            yield Session(space, sftp)
    except BackendError as exc:
        raise FilesUnavailable(str(exc)) from None
    except PermissionError:
        raise PathRefused(
            f"The cluster does not let {space.account.username} read or change this; check its permissions there."
        ) from None
    except (FileNotFoundError, PathRefused, FilesUnavailable):
        raise
    except (OSError, EOFError, paramiko.SSHException) as exc:  # the SFTP server's own refusal, or a dropped channel
        raise FilesUnavailable(
            f"The cluster refused: {exc}. Try again; if it keeps failing, tell your instructor."
        ) from None


class _Pipe(io.RawIOBase):
    """A write-only stream an archive writes into; what it holds is taken chunk by chunk."""

    def __init__(self):
        self.parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        data, self.parts = b"".join(self.parts), []
        return data


def _check_archive_limits(entries: int, size: int) -> None:
    most, largest = settings.GPULAB_FILES_ARCHIVE_MAX_ENTRIES, settings.GPULAB_FILES_ARCHIVE_MAX_BYTES
    if entries > most:
        raise FilesUnavailable(
            f"This folder holds more than {most:,} entries; download a smaller folder or use the terminal."
        )
    if size > largest:
        raise FilesUnavailable(
            f"This folder holds more than {_bytes_in_words(largest)}; download a smaller folder or use the terminal."
        )


def _bytes_in_words(size: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} bytes"


LEFT_OUT_NAME = "LEFT-OUT.txt"


def _left_out_note(left_out: list[str]) -> bytes:
    lines = [
        "These files were left out of the archive: each has other names on the cluster (a hard link), so it may be",
        "another person's file linked in, and the portal does not read it. Copy one on the cluster (cp) to include it.",
        "",
        *(paths.shown(name) for name in left_out),
    ]
    return ("\n".join(lines) + "\n").encode()


def archive(session: Session, walk: FolderWalk, fmt: str) -> Iterator[bytes]:
    """The files Session.walk listed as a .zip or .tar, produced while it is sent (nothing held whole in memory or on
    disk); each step reads at most one chunk or opens one file, so an abandoned download stops within one step.
    Hard-linked files are left out, and a LEFT-OUT.txt at the archive's top says which and why."""
    pipe, note = _Pipe(), _left_out_note(walk.left_out) if walk.left_out else None
    if fmt == "tar":
        with tarfile.open(fileobj=pipe, mode="w|") as tar:
            for path, name, attrs in walk.files:
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = attrs.st_size or 0, attrs.st_mtime or 0, 0o644
                yield from _tar_member(tar, info, session.read_range(path, 0, info.size), pipe)
            if note is not None:
                info = tarfile.TarInfo(f"{walk.top}/{LEFT_OUT_NAME}")
                info.size, info.mtime, info.mode = len(note), time.time(), 0o644
                tar.addfile(info, io.BytesIO(note))
        yield pipe.take()
        return
    with zipfile.ZipFile(pipe, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for path, name, attrs in walk.files:
            entry = zipfile.ZipInfo(name, time.localtime(max(attrs.st_mtime or 0, ZIP_EPOCH))[:6])
            with zf.open(entry, "w", force_zip64=True) as out:
                for chunk in session.read_range(path, 0, attrs.st_size or 0):
                    out.write(chunk)
                    yield pipe.take()
            yield pipe.take()
        if note is not None:
            zf.writestr(zipfile.ZipInfo(f"{walk.top}/{LEFT_OUT_NAME}", time.localtime()[:6]), note)
    yield pipe.take()


def _tar_member(tar: tarfile.TarFile, info: tarfile.TarInfo, chunks: Iterator[bytes], pipe: _Pipe) -> Iterator[bytes]:
    """One member as tarfile.addfile writes it (header, data, padding to a block), chunk by chunk; a file that shrank
    while it was read is padded with NULs to the size its header says."""
    out = tar.fileobj  # tarfile's stream over the pipe: it keeps its own buffer, so every byte goes through it
    assert out is not None, "a TarFile opened for writing has its stream"
    header = info.tobuf(tar.format, tar.encoding, tar.errors)
    out.write(header)
    written = 0
    for chunk in chunks:
        chunk = chunk[: info.size - written]
        out.write(chunk)
        written += len(chunk)
        yield pipe.take()
    blocks, remainder = divmod(info.size, tarfile.BLOCKSIZE)
    out.write(tarfile.NUL * (info.size - written + (tarfile.BLOCKSIZE - remainder if remainder else 0)))
    tar.offset += len(header) + (blocks + (1 if remainder else 0)) * tarfile.BLOCKSIZE
    tar.members.append(info)  # type: ignore[attr-defined]  # typeshed omits TarFile.members, which addfile appends to
    yield pipe.take()
