"""A JupyterLab session's secrets are never served by the file browser (sessions/secret_files.py): not to the
student who owns the run directory, not to the course's instructor, not to a TA, in no listing, download, view,
archive or rename; by name (the server's and connection files, the portal's runtime directory) and, for a kernel's
connection file, by its owner-only mode. The run directory is a real folder on this machine, reached through a
stand-in for the SFTP channel (tests/local_sftp.py)."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile

import pytest

from core.choices import JobState
from sessions import api, views
from sessions.secret_files import is_secret
from tests.local_sftp import opened_locally

SECRETS = [".jupyter-server.json", ".jupyter-server-8890.json", "jpserver-4242.json", "jpserver-4242-open.html"]


@pytest.fixture
def run_dir(tmp_path, monkeypatch, running_job):
    """Alice's run directory, with the files a JupyterLab session leaves, and the portal's runtime directory."""
    root = tmp_path / "gpulab-test" / "jobs" / str(running_job.pk)
    root.mkdir(parents=True)
    for name in SECRETS:
        (root / name).write_text('{"token": "s3cret"}')
        os.chmod(root / name, 0o600)
    (root / "kernel-abc.json").write_text('{"key": "hmac"}')
    os.chmod(root / "kernel-abc.json", 0o600)
    (root / "kernel-results.json").write_text("[1, 2]")  # a student's own file of the same pattern, readable
    os.chmod(root / "kernel-results.json", 0o644)
    (root / "notes.txt").write_text("hello")
    (root / "innocent.txt").symlink_to(".jupyter-server.json")
    runtime = tmp_path / "gpulab-test" / ".gpulab-runtime" / str(running_job.pk)
    runtime.mkdir(parents=True)
    (runtime / "session.env").write_text("GPULAB_SESSION_TOKEN=s3cret\n")
    for module in (api, views):
        monkeypatch.setattr(module, "opened", opened_locally(tmp_path))
    monkeypatch.setattr("sessions.files.opened", opened_locally(tmp_path))
    return root


@pytest.mark.parametrize(
    "path, mode, secret",
    [
        (".jupyter-server.json", 0o100644, True),
        ("sub/jpserver-1.json", None, True),
        ("JPSERVER-1.JSON", None, True),
        (".gpulab-runtime/x/session.env", 0o100600, True),
        (".gpulab-runtime", 0o040700, True),
        ("kernel-1.json", 0o100600, True),
        ("kernel-1.json", 0o100644, False),
        ("kernel-1.json", None, False),
        ("notes.txt", 0o100600, False),
        ("jupyter_server_config.json", 0o100600, False),
    ],
)
def test_a_sessions_secrets_are_known_by_name_and_a_kernels_key_by_its_mode(path, mode, secret):
    assert is_secret(path, mode) is secret


@pytest.mark.parametrize("who", ["alice", "instructor", "ta"])
def test_owner_instructor_and_ta_never_get_the_sessions_secrets(who, request, run_dir, running_job, api_for):
    user = request.getfixturevalue(who)
    client = api_for(user)
    base = f"/api/v1/files/jobs/{running_job.pk}/"
    listed = {e["name"] for e in client.get(base).json()["entries"]}
    assert listed == {"notes.txt", "kernel-results.json", "innocent.txt"}
    for name in [*SECRETS, "kernel-abc.json", "innocent.txt"]:  # the link leads to a secret: refused by its target
        for endpoint in ("download/", "text/"):
            answer = client.get(base + endpoint, {"path": name})
            assert answer.status_code == 400 and "secret" in answer.json()["detail"], (name, endpoint)
    assert client.get(base + "download/", {"path": "notes.txt"}).status_code == 200
    archive = client.get(base + "download/", {"path": "", "archive": "zip"})
    assert archive.status_code == 200
    names = zipfile.ZipFile(io.BytesIO(b"".join(archive))).namelist()
    assert sorted(n.split("/", 1)[1] for n in names) == ["kernel-results.json", "notes.txt"]


@pytest.mark.parametrize("who", ["alice", "instructor", "ta"])
def test_the_run_directory_pages_list_no_secret(who, request, run_dir, running_job, login):
    page = login(request.getfixturevalue(who)).get(f"/jobs/{running_job.pk}/files/").content.decode()
    assert "notes.txt" in page and "jpserver" not in page and ".jupyter-server" not in page
    assert "kernel-abc.json" not in page
    card = login(request.getfixturevalue(who)).get(f"/jobs/{running_job.pk}/artefacts/").content.decode()
    assert "notes.txt" in card and "jpserver" not in card and ".jupyter-server" not in card
    viewed = login(request.getfixturevalue(who)).get(f"/jobs/{running_job.pk}/files/", {"file": "jpserver-4242.json"})
    assert "s3cret" not in viewed.content.decode()


def test_the_owner_cannot_rename_a_secret_into_a_name_files_would_serve(run_dir, running_job, alice, api_for):
    base = f"/api/v1/files/jobs/{running_job.pk}/"
    for name in (".jupyter-server.json", "kernel-abc.json"):
        answer = api_for(alice).post(base + "rename/", {"path": name, "name": "plain.txt"}, format="json")
        assert answer.status_code == 400 and "secret" in answer.json()["detail"]
    assert (run_dir / ".jupyter-server.json").exists() and not (run_dir / "plain.txt").exists()


def test_the_portals_runtime_directory_is_never_listed_or_served_from_the_lab_space(
    tmp_path, run_dir, running_job, cluster, alice, api_for, monkeypatch
):
    """Where the student's lab space is the whole lab directory (their own account), the runtime directory beside
    jobs/ is in it: hidden and refused there too."""
    monkeypatch.setattr("sessions.files.files_subdir", lambda cluster, account, user: "")
    base = f"/api/v1/files/clusters/{cluster.pk}/"
    client = api_for(alice)
    assert ".gpulab-runtime" not in {e["name"] for e in client.get(base).json()["entries"]}
    path = f".gpulab-runtime/{running_job.pk}/session.env"
    assert client.get(base + "download/", {"path": path}).status_code == 400
    assert client.get(base, {"path": ".gpulab-runtime"}).status_code == 400
    archive = client.get(base + "download/", {"path": "", "archive": "zip"})
    assert b"session.env" not in b"".join(archive)


def test_an_ended_session_keeps_its_secrets_refused(run_dir, running_job, alice, api_for):
    running_job.state = JobState.COMPLETED
    running_job.save()
    answer = api_for(alice).get(f"/api/v1/files/jobs/{running_job.pk}/download/", {"path": "jpserver-4242.json"})
    assert answer.status_code == 400


def test_an_archive_skips_secrets_unnamed_and_names_the_hard_links_it_left_out(
    tmp_path, run_dir, running_job, alice, api_for
):
    """Both rules at once: a session's secret is not in the archive, not even named; a hard link (here one of the
    secret under an innocent name, and another student's file) is left out and named in LEFT-OUT.txt."""
    other = tmp_path / "bob"
    other.mkdir()
    (other / "answers.txt").write_text("bob's answers")
    os.link(other / "answers.txt", run_dir / "answers.txt")
    os.link(run_dir / "jpserver-4242.json", run_dir / "copy.json")
    base = f"/api/v1/files/jobs/{running_job.pk}/"
    client = api_for(alice)
    for fmt in ("zip", "tar"):
        answer = client.get(base + "download/", {"path": "", "archive": fmt})
        assert answer.status_code == 200
        body = b"".join(answer)
        names, note = _names_and_note(body, fmt, f"{running_job.pk}/LEFT-OUT.txt")
        inside = sorted(n.split("/", 1)[1] for n in names)
        assert inside == ["LEFT-OUT.txt", "kernel-results.json", "notes.txt"], fmt
        assert f"{running_job.pk}/answers.txt" in note and f"{running_job.pk}/copy.json" in note
        assert "jpserver" not in note and b"s3cret" not in body and b"bob's answers" not in body


def _names_and_note(body: bytes, fmt: str, note_name: str) -> tuple[list[str], str]:
    """An archive's member names and the text of its LEFT-OUT.txt."""
    if fmt == "zip":
        with zipfile.ZipFile(io.BytesIO(body)) as zipped:
            return zipped.namelist(), zipped.read(note_name).decode()
    with tarfile.open(fileobj=io.BytesIO(body)) as tarred:
        note = tarred.extractfile(note_name)
        assert note is not None
        return tarred.getnames(), note.read().decode()
