"""What the portal accepts from a SLURM job's .jupyter-server.json (clusters/backends/batch_notebook.py): the job runs
the student's code, so only an unprivileged port on one of the job's own nodes is ever proxied to."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from clusters.backends import batch_notebook as notebook
from clusters.backends.base import LogChunk
from clusters.backends.kind import ActionRefused, NotebookNotReady
from jobs.builtin import builtin_definitions
from sessions.notebook import PREFIX

TOKEN = "a" * 43


class Backend:
    """The backend interface the address needs: a job file and the job's nodes."""

    def __init__(self, text: str | None, nodes=("gpu01",)):
        self.text, self.nodes = text, list(nodes)

    def read_job_file(self, job_id, name, offset, limit):
        assert name == ".jupyter-server.json"
        if self.text is None:
            return LogChunk(offset=0, data="", eof=True, exists=False)
        return LogChunk(offset=len(self.text), data=self.text, eof=True)

    def job_nodes(self, scheduler_id):
        return self.nodes


JOB = SimpleNamespace(pk=uuid.uuid4(), scheduler_id="42")


def test_the_address_is_the_node_and_port_the_job_wrote():
    found = notebook.address(Backend(f'{{"host": "gpu01", "port": 8890, "token": "{TOKEN}"}}'), JOB)
    assert (found.url, found.token) == ("http://gpu01:8890", TOKEN)


def test_a_session_that_has_not_written_its_file_is_starting():
    with pytest.raises(NotebookNotReady):
        notebook.address(Backend(None), JOB)


@pytest.mark.parametrize(
    "text",
    [
        f'{{"host": "10.0.0.9", "port": 8890, "token": "{TOKEN}"}}',  # not a node of this job: would proxy anywhere
        f'{{"host": "gpu01", "port": 22, "token": "{TOKEN}"}}',  # a privileged port
        f'{{"host": "gpu01/x@evil", "port": 8890, "token": "{TOKEN}"}}',
        '{"host": "gpu01", "port": 8890, "token": "short"}',
        "not json",
    ],
)
def test_a_file_pointing_elsewhere_is_refused(text):
    with pytest.raises(ActionRefused):
        notebook.address(Backend(text), JOB)


def test_the_template_serves_under_the_path_the_portal_proxies():
    definition = next(d for d in builtin_definitions() if d["slug"] == "jupyterlab")
    base_url = PREFIX.format(job_id="$GPULAB_JOB_ID")
    assert f'--ServerApp.base_url="{base_url}"' in definition["body"]
    assert definition["session"] == "jupyterlab"
    assert "JUPYTER_TOKEN" in definition["body"] and "--ServerApp.token" not in definition["body"]  # not in `ps`


def test_a_slurm_rest_cluster_without_its_login_node_refuses_a_jupyterlab_launch_in_words():
    """The server's address is read over SSH: a session launched there could never be opened."""
    from clusters.backends.kind import RenderRefused, RenderRequest
    from clusters.kinds import kind_of

    cluster = SimpleNamespace(host="", display_name="REST only")
    template = SimpleNamespace(session="jupyterlab")
    request = RenderRequest(job_id=JOB.pk, values={}, template=template, course=None, user=None, cluster=cluster)
    with pytest.raises(RenderRefused, match="add the login node"):
        kind_of("slurm-rest").render(request)
