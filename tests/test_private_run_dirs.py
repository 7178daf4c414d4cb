"""Run directories, the lab directory and uploads are private to their owner (0700 folders, 0600 files): the job
script's umask, the student's mkdir through the sudo rule, the SFTP server's umask, the Files page's folders and
uploads. The SFTP side here is an in-memory stand-in that records modes; tests/integration checks the real ones."""

import io
import stat
from types import SimpleNamespace

import pytest

from clusters.backends import as_student
from clusters.backends.as_student import StudentShell
from clusters.backends.slurm_family.script.rendering import RenderContext, render_script
from clusters.backends.ssh import CommandResult
from core.templating.params import parse_schema

pytestmark = pytest.mark.django_db


def test_every_job_script_sets_umask_077_before_the_template_runs():
    ctx = RenderContext(job_id="j1", job_name="x", lab_dir="~/gpulab", preamble="module load cuda")
    script = render_script("touch checkpoint.pt\n", parse_schema([]), {}, ctx)
    lines = script.splitlines()
    assert "umask 077" in lines[lines.index("# Launched from GPU Lab Portal, job j1.") + 1]
    assert script.index("umask 077") < script.index("module load cuda") < script.index("touch checkpoint.pt")


def test_the_student_makes_the_lab_directory_and_jobs_folder_private_as_well_as_the_run_directory(monkeypatch, cluster):
    ran = []
    monkeypatch.setattr(as_student, "run", lambda c, login, argv, **kw: ran.append(argv) or CommandResult(0, "", ""))
    shell = StudentShell(cluster, cluster.service_account(), "alice01")
    shell.make_private_dir("/home/alice01/gpulab/jobs/j1", below="/home/alice01/gpulab")
    lab = "/home/alice01/gpulab"
    mkdir = ["mkdir", "-p", "-m", "0700", lab, f"{lab}/jobs", f"{lab}/jobs/j1"]
    assert ran == [["sudo", "-n", "-u", "alice01", "--", *mkdir]]


def test_the_sftp_server_run_as_the_student_makes_what_it_makes_private(monkeypatch, cluster):
    from contextlib import contextmanager

    seen = {}

    @contextmanager
    def sftp(cluster_, login, *, server=None):
        seen["server"] = server
        yield None

    monkeypatch.setattr(as_student.ssh, "sftp", sftp)
    with StudentShell(cluster, cluster.service_account(), "alice01").sftp():
        pass
    assert seen["server"][-5:] == ["/usr/lib/openssh/sftp-server", "-d", "%d", "-u", "077"]


class FakeSftp:
    """Folders and files by absolute path, each with its mode."""

    def __init__(self):
        self.modes = {"/home/alice01": 0o700}
        self.kinds = {"/home/alice01": stat.S_IFDIR}

    def _path(self, path):
        return path if path.startswith("/") else f"/home/alice01/{path}".rstrip("/")

    def stat(self, path):
        path = self._path(path)
        if path not in self.modes:
            raise FileNotFoundError(path)
        return SimpleNamespace(st_mode=self.kinds[path] | self.modes[path], st_size=0, filename=path)

    lstat = stat

    def normalize(self, path):
        return self._path(path)

    def mkdir(self, path, mode=0o777):
        path = self._path(path)
        self.modes[path], self.kinds[path] = mode & 0o777, stat.S_IFDIR

    def chmod(self, path, mode):
        self.modes[self._path(path)] = mode

    def posix_rename(self, source, target):
        for table in (self.modes, self.kinds):
            table[self._path(target)] = table.pop(self._path(source))

    def open(self, path, mode):
        sftp, path = self, self._path(path)
        sftp.modes.setdefault(path, 0o644)  # what an SFTP server with umask 022 gives a new file
        sftp.kinds[path] = stat.S_IFREG

        class File(io.BytesIO):
            def chmod(self, mode):
                sftp.modes[path] = mode

            def set_pipelined(self, flag):
                pass

        return File()


def test_the_files_page_makes_folders_and_uploads_private_to_their_owner(cluster):
    from sessions.files import Session, Space

    sftp = FakeSftp()
    session = Session(Space(cluster, None, "gpulab", "Your files", confine=True, create=True), sftp)
    assert sftp.modes["/home/alice01/gpulab"] == 0o700  # the lab directory in their home: listable by nobody else
    session.mkdir("", "data")
    session.upload_chunk("data", "corpus.txt", 4, 0, io.BytesIO(b"text"))
    assert sftp.modes["/home/alice01/gpulab/data"] == 0o700
    assert sftp.modes["/home/alice01/gpulab/data/corpus.txt"] == 0o600
