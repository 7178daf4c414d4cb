"""JupyterLab on the local SLURM through the portal's proxy (sessions/notebook_proxy.py): the built-in template
starts it in the lab's Python, the owner reaches it over HTTP and kernel WebSockets and runs PyTorch in it; every
other student gets 404 on its URLs and sockets; the server's token never reaches the browser. The same template on
the slurm-rest kind: submitted through slurmrestd as the student, reached the same way."""

from __future__ import annotations

import pytest
from websockets.exceptions import InvalidStatus

from clusters.choices import RunAs
from core.choices import JobState
from courses.access import launchable_clusters

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
    """The token the job wrote on the cluster (as the student, mode 0600), read as root: what must never reach the
    browser."""
    import json

    path = run_dir(student, job) / ".jupyter-server.json"
    assert oct(path.stat().st_mode & 0o777) == "0o600" and path.owner() == student
    return json.loads(path.read_text())["token"]
