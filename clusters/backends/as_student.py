"""Commands and files as a student's own cluster user, through the service account's SSH login and its sudo rule.

Invariant: only the commands of the rule in docs/cluster-identity.md (slurm_family/sudo_rule.REQUIRED) run as the
student, each as `sudo -n -u <student> -- <argv>` joined with shlex.join; the student's name comes from a
ClusterAccount made by clusters.identity (a validated cluster username, never typed by the student). Run directories
are made by the student's user with mode 0700 (the lab directory in their home too), and the SFTP server runs with
umask 077, so no other student (and not the service account) can read them.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from contextlib import contextmanager

import paramiko

from clusters.choices import POSIX_NAME, SYSTEM_ACCOUNTS

from . import ssh
from .base import AuthenticationFailed, BackendError, LogChunk, complete_utf8
from .ssh import CommandResult, run

SFTP_SERVER = "/usr/lib/openssh/sftp-server"  # Debian's path; the sudo rule must name the login node's own
SUDO_REFUSED = re.compile(r"sudo: (a password is required|a terminal is required|.*not allowed)", re.IGNORECASE)


class SudoRefused(AuthenticationFailed):
    """The login node's sudo rule does not let the service account run the command as the student."""


class StudentShell:
    """One student's user on one cluster, reached as the cluster's service account (`login`)."""

    def __init__(self, cluster, login, student: str):
        if login is None:
            raise BackendError(
                f"The cluster “{cluster.display_name}” has no service account. An admin must add one before jobs "
                "can run."
            )
        # Checked again here, whatever made the row: sudo must never be asked to act as root or a system account.
        if not POSIX_NAME.match(student) or student in SYSTEM_ACCOUNTS or student == login.username:
            raise BackendError(f"“{student}” is not a cluster username jobs may run as; an admin must correct it.")
        self.cluster, self.login, self.student = cluster, login, student

    def as_student(self, argv: list[str]) -> list[str]:
        """`argv` run as the student through the sudo rule (for a channel the caller opens itself)."""
        return ["sudo", "-n", "-u", self.student, "--", *argv]

    def refused(self, command: str) -> SudoRefused:
        return SudoRefused(
            f"The login node of “{self.cluster.display_name}” does not let {self.login.username} run {command} as "
            f"{self.student}: an admin must install the sudo rule in docs/cluster-identity.md and put "
            f"{self.student} in the students' group."
        )

    def run(self, argv: list[str], *, stdin: str = "") -> CommandResult:
        result = run(self.cluster, self.login, self.as_student(argv), stdin=stdin)
        if not result.ok and SUDO_REFUSED.search(result.stderr):
            raise self.refused(argv[0])
        return result

    @contextmanager
    def sftp(self) -> Iterator[paramiko.SFTPClient]:
        """SFTP as the student: the login node's sftp-server run through the sudo rule, started in the student's home
        (`-d %d`), so paths relative to the lab directory mean the same as for their jobs."""
        try:
            server = self.as_student([SFTP_SERVER, "-d", "%d", "-u", "077"])  # what it makes: the student's alone
            with ssh.sftp(self.cluster, self.login, server=server) as channel:
                yield channel
        except ssh.ServerRefused as exc:
            raise (self.refused("sftp-server") if SUDO_REFUSED.search(str(exc)) else exc) from None

    def home(self) -> str:
        """The student's home directory, from the login node's user database (no sudo needed)."""
        result = run(self.cluster, self.login, ["getent", "passwd", self.student])
        fields = result.stdout.strip().split(":")
        if not result.ok or len(fields) < 7 or not fields[5].startswith("/"):
            raise BackendError(
                f"The cluster “{self.cluster.display_name}” has no user {self.student}: an admin must create it "
                "there, or correct the cluster username in the portal."
            )
        return fields[5]

    def path(self, lab_dir: str, *parts: str) -> str:
        """An absolute path under the lab directory; "~" is the student's home."""
        base = lab_dir.strip() or "~/gpulab"
        if base == "~" or base.startswith("~/"):
            base = posixpath.join(self.home(), base[2:])
        return posixpath.join(base, *parts)

    def make_private_dir(self, path: str, *, below: str = "") -> None:
        """`path` and its missing parents, made by the student, mode 0700: `path` and each directory from `below`
        (the lab directory) down to it, so no other user lists the lab's job folders; those above `below` by the
        student's umask. Directories that exist keep their mode (a shared lab directory's `jobs/`, 1733)."""
        chain = [path]
        if below and path.startswith(below.rstrip("/") + "/"):
            parts = path[len(below.rstrip("/")) + 1 :].split("/")
            chain = [posixpath.join(below, *parts[:depth]) for depth in range(len(parts) + 1)]
        result = self.run(["mkdir", "-p", "-m", "0700", *chain])
        if not result.ok:
            raise BackendError(f"Could not make the job's directory {path} as {self.student}: {result.message()}")

    def read(self, path: str, offset: int, limit: int) -> LogChunk:
        """Up to `limit` bytes of `path` from `offset`, read by the student's user."""
        # From one byte before `offset`: dd skips past the end of a file without a word, so an empty answer from
        # there is how a read past the end shows itself (a log follower's usual read, at the end, costs nothing more).
        before = 1 if offset > 0 else 0
        skip, count = offset - before, limit + before
        argv = ["dd", f"if={path}", "iflag=skip_bytes,count_bytes", f"skip={skip}", f"count={count}", "status=none"]
        result = self.run(argv)
        if not result.ok:
            if "No such file" in result.stderr:
                return LogChunk(offset=0, data="", eof=True, exists=False)
            if "cannot skip" not in result.stderr:
                raise BackendError(f"Could not read {path} as {self.student}: {result.message()}")
        if not result.ok or len(result.raw_stdout) < before:  # past the end: say where the end is, as SFTP does
            with self.sftp() as sftp:
                return LogChunk(offset=sftp.stat(path).st_size or 0, data="", eof=True)
        raw = complete_utf8(result.raw_stdout[before:])
        text = raw.decode("utf-8", errors="replace")
        # Fewer bytes than asked (before dropping a cut character) means the end of the file for now.
        return LogChunk(offset=offset + len(raw), data=text, eof=len(result.raw_stdout) < count)


def for_account(cluster, account) -> StudentShell | None:
    """The student's shell when `account` is a cluster username reached through the service account, else None."""
    if getattr(account, "auth_method", "") != "via-service":  # clusters.models.AuthMethod.VIA_SERVICE
        return None
    return StudentShell(cluster, cluster.service_account(), account.username)
