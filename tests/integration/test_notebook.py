"""JupyterLab on the local SLURM through the portal's proxy (sessions/notebook_proxy.py): the built-in template
starts it in the lab's Python, the owner reaches it over HTTP and kernel WebSockets and runs PyTorch in it; every
other student gets 404 on its URLs and sockets; the server's token never reaches the browser. The same template on
the slurm-rest kind: submitted through slurmrestd as the student, reached the same way."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import stat
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from websockets.exceptions import InvalidStatus

from clusters.choices import RunAs
from core.choices import JobState
from courses.access import launchable_clusters
from courses.models import Enrollment, Role
from jobs import session_tokens
from jobs.models import Job
from sessions import notebook

from .conftest import slurm
from .notebooks import V1_PROTOCOL, Browserless, kernel_info_v1, launch_notebook, run_code
from .test_cluster_identity import run_dir, students, to_slurm_rest, with_identities  # noqa: F401  (UNIX users)


@pytest.fixture
def notebook_job(worker, web, alice, bob, cluster, students, api_for, job_state):  # noqa: F811
    with_identities(cluster, RunAs.SUDO, alice, bob, students)  # as labalice, clear of clean-ups of labsvc's jobs
    job = launch_notebook(api_for, alice, cluster)
    job = job_state(job, JobState.RUNNING, timeout=120)
    Browserless(web, alice, job).wait_ready()
    return job


@pytest.mark.timeout(300)
def test_owner_runs_torch_in_a_kernel_through_the_portal(notebook_job, web, alice, students):  # noqa: F811
    lab = Browserless(web, alice, notebook_job)
    page = lab.get("lab")
    assert page.status_code == 200 and "JupyterLab" in page.text
    token = _server_token(notebook_job, students[0])
    assert token not in page.text and "token" not in page.url
    assert not any("token" in c.name.lower() or c.value == token for c in lab.http.cookies)
    kernel = lab.post("api/kernels", {"name": "python3"})
    assert kernel.status_code == 201, kernel.text
    with lab.socket(f"api/kernels/{kernel.json()['id']}/channels") as socket:
        out = run_code(socket, "import torch; print(torch.__version__)")
    assert out.strip().startswith("2.") and "+cpu" in out, out


@pytest.mark.timeout(300)
def test_a_socket_offering_jupyterlabs_binary_protocol_gets_it_and_kernel_replies(notebook_job, web, alice):
    """JupyterLab 4 offers the v1 subprotocol and frames by what the server chose: the browser's socket must be
    answered with the server's choice, and binary frames must pass as binary both ways."""
    lab = Browserless(web, alice, notebook_job)
    kernel = lab.post("api/kernels", {"name": "python3"})
    assert kernel.status_code == 201, kernel.text
    path = f"api/kernels/{kernel.json()['id']}/channels"
    with lab.socket(path, subprotocols=[V1_PROTOCOL]) as socket:
        assert socket.subprotocol == V1_PROTOCOL
        assert kernel_info_v1(socket)["implementation"] == "ipython"
        assert kernel_info_v1(socket)["status"] == "ok"  # and again on the same socket


@pytest.mark.timeout(300)
def test_other_students_get_404_on_every_notebook_url_and_socket(notebook_job, web, alice, bob, carol, client):
    kernel = Browserless(web, alice, notebook_job).post("api/kernels", {"name": "python3"}).json()
    paths = ["lab", "api/status", "api/kernels", "api/contents", f"api/kernels/{kernel['id']}"]
    for user in (bob, carol):
        other = Browserless(web, user, notebook_job)
        for path in paths:
            assert other.get(path).status_code == 404, path
        assert other.post("api/kernels", {"name": "python3"}).status_code == 404
        with pytest.raises(InvalidStatus) as refused:
            other.socket(f"api/kernels/{kernel['id']}/channels")
        assert refused.value.response.status_code == 404
    anonymous = Browserless(web, alice, notebook_job)
    anonymous.http.cookies.clear()
    assert anonymous.get("api/status").status_code == 404


@pytest.mark.timeout(300)
def test_jupyterlab_on_a_slurmrest_cluster_answers_its_owner_through_the_portal(
    worker,
    web,
    alice,
    bob,
    carol,
    cluster,
    students,  # noqa: F811
    api_for,
    job_state,
    services,
):
    """slurmrestd submits the session as the student (X-SLURM-USER-NAME); the portal reads where it listens over the
    login node as her, checks the node against slurmrestd's record of the job, and proxies it like the SSH kind's."""
    to_slurm_rest(cluster, services)
    with_identities(cluster, RunAs.REST_USER, alice, bob, students)
    job = job_state(launch_notebook(api_for, alice, cluster), JobState.RUNNING, timeout=120)
    assert list(launchable_clusters(alice, job.course, job.template)) == [cluster]  # offered on slurm-rest
    assert job.cluster.kind == "slurm-rest"
    assert slurm("squeue", "--noheader", f"--jobs={job.scheduler_id}", "--format=%u|%k").strip() == (
        f"{students[0]}|gpulab:{job.pk}"  # submitted through slurmrestd, as labalice
    )
    lab = Browserless(web, alice, job)
    lab.wait_ready()
    status = lab.get("api/status")
    assert status.status_code == 200 and "kernels" in status.json()
    page = lab.get("lab")
    assert page.status_code == 200 and "JupyterLab" in page.text
    assert _server_token(job, students[0]) not in page.text
    for user in (bob, carol):
        other = Browserless(web, user, job)
        assert other.get("api/status").status_code == 404 and other.get("lab").status_code == 404


def _server_token(job, student: str) -> str:
    """The token the portal made for the session (kept encrypted on the job's row): what must never reach the
    browser, nor lie in a file the portal's Files could serve."""
    token = session_tokens.of(Job.objects.get(pk=job.pk))
    assert len(token) >= 40
    return token


def _files_holding(root: Path, secret: str) -> list[str]:
    """Every file under `root` (read as root) whose bytes hold `secret`."""
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink() and secret.encode() in path.read_bytes():
                found.append(str(path.relative_to(root)))
    return found


@pytest.mark.timeout(300)
def test_the_token_is_the_portals_and_lies_nowhere_files_could_serve(
    notebook_job,
    web,
    alice,
    instructor,
    make_user,
    course,
    students,  # noqa: F811
    api_for,
):
    """Not in the run directory (owner, instructor and TA all read it through Files), not in the script the job page
    shows; JupyterLab's own runtime files (its server file, the kernels' connection files) are in the session's
    private runtime directory outside it, and the file that carried the token there is gone once read. Copied into
    the run directory (as an older template wrote them), Files refuses them to all three: by name, and a kernel's
    connection file by its 0600 mode."""
    token = _server_token(notebook_job, students[0])
    lab = Browserless(web, alice, notebook_job)
    kernel = lab.post("api/kernels", {"name": "python3"})
    assert kernel.status_code == 201, kernel.text
    run = run_dir(students[0], notebook_job)
    assert _files_holding(run, token) == []
    assert token not in notebook_job.script
    runtime = run.parent.parent / ".gpulab-runtime" / str(notebook_job.pk)
    # jupyter_client sets the sticky bit on the folder of a connection file it writes, so only the permission bits
    assert runtime.stat().st_mode & 0o777 == 0o700 and runtime.owner() == students[0]
    assert not (runtime / "session.env").exists()  # read and deleted by the job
    names = sorted(p.name for p in runtime.iterdir())
    assert any(n.startswith("jpserver-") and n.endswith(".json") for n in names), names
    assert any(n.startswith("kernel-") for n in names), names  # the kernel's connection file (its HMAC key)
    assert not list(run.glob("jpserver-*")) and not list(run.glob("kernel-*.json"))

    owner = run.stat()
    planted = []
    for found in (next(runtime.glob("jpserver-*.json")), next(runtime.glob("kernel-*.json"))):
        shutil.copy2(found, run / found.name)
        os.chown(run / found.name, owner.st_uid, owner.st_gid)
        assert stat.S_IMODE((run / found.name).stat().st_mode) == 0o600
        planted.append(found.name)
    ta = make_user("tara")
    Enrollment.objects.create(course=course, user=ta, role=Role.TA)
    base = f"/api/v1/files/jobs/{notebook_job.pk}/"
    for user in (alice, instructor, ta):
        listed = api_for(user).get(base)
        assert listed.status_code == 200, listed.content
        assert not set(planted) & {e["name"] for e in listed.json()["entries"]}
        for name in planted:
            for endpoint in ("download/", "text/"):
                assert api_for(user).get(base + endpoint, {"path": name}).status_code == 400, (user, name)
        archive = api_for(user).get(base + "download/", {"path": "", "archive": "zip"})
        assert archive.status_code == 200 and token.encode() not in b"".join(archive)


@pytest.mark.timeout(300)
def test_a_port_file_rewritten_by_the_student_never_moves_the_proxy(notebook_job, web, alice, students, portal_env):  # noqa: F811
    """The student's job may write anything into .gpulab-notebook.json: a host is ignored (the portal connects to
    SLURM's NodeAddr for the job's node), and a port outside the portal's range or of its own Redis is refused."""
    run = run_dir(students[0], notebook_job)
    port_file = run / ".gpulab-notebook.json"
    port = json.loads(port_file.read_text())["port"]
    lab = Browserless(web, alice, notebook_job)
    node = slurm("squeue", "--noheader", f"--jobs={notebook_job.scheduler_id}", "--format=%N").strip()
    redis_port = urlsplit(portal_env["REDIS_URL"]).port or 6379
    try:
        port_file.write_text(json.dumps({"host": f"{node}.attacker.example", "port": port}))
        notebook.forget(notebook_job.pk)
        assert lab.get("api/status").status_code == 200  # the host is not the file's: still the node's NodeAddr
        for hostile in (redis_port, 22, 5432, 1):
            port_file.write_text(json.dumps({"host": "127.0.0.1", "port": hostile}))
            notebook.forget(notebook_job.pk)
            answer = lab.get("api/status")
            assert answer.status_code == 502 and "ports" in answer.text, (hostile, answer.text)
    finally:
        port_file.write_text(json.dumps({"port": port}))
        notebook.forget(notebook_job.pk)


def _raw_get(lab: Browserless, raw_path: str) -> tuple[int, dict[str, str]]:
    """GET a path sent exactly as written (requests would resolve its dot segments first), as the owner."""
    parts = urlsplit(lab.web.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest("GET", raw_path, skip_accept_encoding=True)
        connection.putheader("Cookie", f"sessionid={lab.http.cookies['sessionid']}")
        connection.endheaders()
        answer = connection.getresponse()
        answer.read()
        return answer.status, dict(answer.getheaders())
    finally:
        connection.close()


@pytest.mark.timeout(300)
def test_traversal_out_of_the_sessions_path_is_404_and_widening_headers_are_dropped(notebook_job, web, alice):
    lab = Browserless(web, alice, notebook_job)
    base = f"/jobs/{notebook_job.pk}/lab/"
    for path in ("../../api/v1/jobs/", "..%2f..%2fapi/status", "%2e%2e/%2e%2e/x", "api/..%5c..%5c..%5cx", "..\\..\\x"):
        status, _ = _raw_get(lab, base + path)
        assert status == 404 or (status == 400 and "\\" in path), (path, status)  # uvicorn may refuse a raw "\\"
    status, headers = _raw_get(lab, base + "api//status")  # a doubled slash is normalized, still under the prefix
    assert status == 200, status
    status, headers = _raw_get(lab, base + "lab")
    assert status == 200
    names = {name.lower() for name in headers}
    assert "service-worker-allowed" not in names and "access-control-allow-origin" not in names
