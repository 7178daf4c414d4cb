"""Files in a user's lab space, looked at over SFTP as the identity their jobs run as (both SLURM kinds).

Invariant: a path here is a relative path the template's pattern already checked (no leading /, no ..); it is read
below the lab directory (and the user's own folder in it) exactly as the job would read it, by the same user.
"""

from __future__ import annotations

import posixpath
import stat
from collections.abc import Iterator
from contextlib import contextmanager

import paramiko

from .. import as_student, ssh


def _lab(cluster) -> str:
    """The lab directory as SFTP sees it: "~/x" relative to the login's home."""
    base = cluster.lab_dir.strip() or "~/gpulab"
    if base == "~":
        return "."
    return base[2:] if base.startswith("~/") else base


@contextmanager
def _sftp_as(cluster, account, student) -> Iterator[paramiko.SFTPClient]:
    if student:
        with student.sftp() as sftp:
            yield sftp
    else:
        with ssh.sftp(cluster, account) as sftp:
            yield sftp


def unreadable(cluster, account, subdir: str, paths: dict[str, str]) -> dict[str, str]:
    """{name: why} for each of `paths` ({name: path in the Files space}) that is missing, a folder, or not readable
    by the job's user; opening it for reading is the check (sftp-server opens as that user, like `test -r`)."""
    student = as_student.for_account(cluster, account)
    who = student.student if student else account.username
    root = posixpath.join(_lab(cluster), subdir) if subdir else _lab(cluster)
    where = f"your Files on “{cluster.display_name}”"
    problems = {}
    with _sftp_as(cluster, account, student) as sftp:
        for name, path in paths.items():
            full = posixpath.join(root, path)
            try:
                if stat.S_ISDIR(sftp.stat(full).st_mode or 0):
                    problems[name] = f"“{path}” in {where} is a folder: give the path of a file in it."
                    continue
                with sftp.open(full, "rb"):
                    pass
            except FileNotFoundError:
                problems[name] = (
                    f"There is no file “{path}” in {where}. Upload it on the Files page, or correct the path: it is "
                    "relative to your Files space, for example data/notes.txt."
                )
            except PermissionError:
                problems[name] = (
                    f"“{path}” in {where} cannot be read by {who}, the user your jobs run as. Upload it again from "
                    "the Files page, or make it readable (chmod u+r)."
                )
    return problems
