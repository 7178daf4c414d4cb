"""Files and the terminal when jobs run as each student's own cluster user, on the local SLURM: through the sudo rule
over SSH (`slurm`, run_as sudo) and through slurmrestd impersonation (`slurm-rest`, run_as rest-user), where the
service account's SSH login runs sftp-server and `srun --jobid=… --overlap --pty bash -l` as the student through the
rule scripts/local_slurm.sh writes. Every file operation lands as the student's user in their own home; another
student gets 404 on every file and terminal URL and a refused terminal socket, in both modes."""

from __future__ import annotations

import io
import os
import pwd
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse
from websockets.exceptions import InvalidStatus

from clusters.choices import RunAs
from clusters.identity import set_cluster_username
from sessions.files import OPENSSH_FROM_BYTES

from .jobs_api import launch
from .test_cluster_identity import to_slurm_rest
from .test_files import body, check_large_download, upload
from .test_terminal import open_socket, plain, read_until

LAB_DIR = "~/gpulab-sessions-test"
# The lab students' homes and the OpenSSH readers the download checks look for are the node group's to share.
pytestmark = pytest.mark.slurm_node
MODES = [RunAs.SUDO, RunAs.REST_USER]


def home_of(name: str) -> Path:
    return Path(pwd.getpwnam(name).pw_dir)


@pytest.fixture(params=MODES, ids=["sudo", "slurmrestd"])
def as_students(request, cluster, alice, bob, services):
    """The cluster in one of the modes whose jobs run as each student's user: alice is labalice, bob labbob."""
    names = os.environ.get("GPULAB_STUDENT_USERS", "labalice labbob").split()
    if request.param == RunAs.REST_USER:
        to_slurm_rest(cluster, services)
    cluster.run_as, cluster.lab_dir = request.param, LAB_DIR
    cluster.full_clean()
    cluster.save()
    set_cluster_username(alice, names[0])
    set_cluster_username(bob, names[1])
    yield names
    for name in names:  # their jobs are the test's own: conftest's _quiesce cancels them
        shutil.rmtree(home_of(name) / LAB_DIR[2:], ignore_errors=True)


def test_files_are_listed_uploaded_renamed_zipped_and_deleted_as_the_student_s_own_user(
    as_students, cluster, alice, bob, api_for
):
    client, base = api_for(alice), reverse("api:files-cluster", args=[cluster.pk])
    data = os.urandom(2 * 2**20 + 77)
    assert client.post(base + "mkdir/", {"path": "", "name": "data"}, format="json").status_code == 201
    upload(client, base, "train.bin", data, chunk=2**20, path="data")
    lab = home_of(as_students[0]) / LAB_DIR[2:]
    written = lab / "data" / "train.bin"
    assert written.read_bytes() == data  # in labalice's own home, written by labalice (not the service account)
    assert pwd.getpwuid(written.stat().st_uid).pw_name == as_students[0]
    assert pwd.getpwuid(written.parent.stat().st_uid).pw_name == as_students[0]

    listing = client.get(base, {"path": "data"}).json()
    assert [(e["name"], e["size"]) for e in listing["entries"]] == [("train.bin", len(data))]
    assert body(client.get(base + "download/", {"path": "data/train.bin"})) == data
    ranged = client.get(base + "download/", {"path": "data/train.bin"}, HTTP_RANGE="bytes=10-19")
    assert ranged.status_code == 206 and body(ranged) == data[10:20]
    upload(client, base, "notes.txt", b"as my own user\n", chunk=1024)
    assert client.get(base + "text/", {"path": "notes.txt"}).json()["text"] == "as my own user\n"
    renamed = client.post(base + "rename/", {"path": "notes.txt", "name": "readme.txt"}, format="json")
    assert renamed.status_code == 200 and (lab / "readme.txt").exists() and not (lab / "notes.txt").exists()
    archive = zipfile.ZipFile(io.BytesIO(body(client.get(base + "download/", {"path": "data", "archive": "zip"}))))
    assert archive.read("data/train.bin") == data
    assert client.post(base + "delete/", {"path": "data"}, format="json").status_code == 204
    assert not (lab / "data").exists()

    # bob's own space is labbob's home: alice's file is not there, and bob's upload lands as labbob.
    bob_client = api_for(bob)
    assert [e["name"] for e in bob_client.get(base).json()["entries"]] == []
    upload(bob_client, base, "mine.txt", b"bob\n", chunk=1024)
    bobs = home_of(as_students[1]) / LAB_DIR[2:] / "mine.txt"
    assert pwd.getpwuid(bobs.stat().st_uid).pw_name == as_students[1]


def test_a_large_file_is_read_through_openssh_by_the_student_s_own_user(as_students, web, cluster, alice, api_for):
    base = reverse("api:files-cluster", args=[cluster.pk])
    assert api_for(alice).get(base).status_code == 200  # the lab space, made by labalice on first use
    target = home_of(as_students[0]) / LAB_DIR[2:] / "checkpoint.pt"
    data = os.urandom(OPENSSH_FROM_BYTES + 99)
    target.write_bytes(data)
    shutil.chown(target, as_students[0])
    target.chmod(0o600)  # only labalice can read it: the service account's own dd could not
    check_large_download(web, alice, base + "download/?path=checkpoint.pt", data, target, as_students[0])


def test_another_student_gets_404_on_every_file_and_terminal_url_and_a_refused_socket(
    as_students, worker, web, cluster, alice, bob, carol, client, api_for, sleep_template, job_state
):
    job = job_state(launch(api_for, alice, seconds=240, time_minutes=5), "running")
    run_dir = home_of(as_students[0]) / LAB_DIR[2:] / "jobs" / str(job.pk)
    assert pwd.getpwuid(run_dir.stat().st_uid).pw_name == as_students[0]
    (run_dir / "model.pt").write_bytes(b"weights")  # as root: what the job would have written
    shutil.chown(run_dir / "model.pt", as_students[0])

    api = reverse("api:files-job", args=[job.pk])
    assert body(api_for(alice).get(api + "download/", {"path": "model.pt"})) == b"weights"  # read as labalice
    pages = [
        reverse("sessions:job_files", args=[job.pk]),
        reverse("sessions:job_artefacts", args=[job.pk]),
        f"/jobs/{job.pk}/terminal/",
    ]
    reads = [api, api + "download/?path=model.pt", api + "text/?path=model.pt", api + "download/?path=&archive=zip"]
    for user in (bob, carol):
        client.force_login(user)
        for url in pages:
            assert client.get(url).status_code == 404, url
        for url in reads:
            assert api_for(user).get(url).status_code == 404, url
        assert api_for(user).post(api + "delete/", {"path": "model.pt"}, format="json").status_code == 404
        with pytest.raises(InvalidStatus) as refusal:
            open_socket(web, user, job)
        assert refusal.value.response.status_code == 403  # closed before the handshake, as for a missing job
    assert (run_dir / "model.pt").exists()


def test_the_terminal_opens_a_shell_as_the_student_s_own_user_inside_the_job(
    as_students, worker, web, cluster, alice, api_for, sleep_template, job_state
):
    job = job_state(launch(api_for, alice, seconds=240, time_minutes=5), "running")
    with open_socket(web, alice, job) as socket:
        socket.send(b"echo who=$(id -un) job=$SLURM_JOB_ID\n")
        answer = re.compile(rf"who={as_students[0]} job={job.scheduler_id}\r?\n")
        output, closed = read_until(socket, lambda out: answer.search(plain(out)))
    assert answer.search(plain(output)) and closed is None, (output, closed)
