"""Where the portal connects for a SLURM job's JupyterLab, and with which token
(clusters/backends/slurm_family/notebook.py, jobs/session_tokens.py): the job runs the student's code, so the host is
the scheduler's address for the job's node, the port one the job reports from the portal's range that none of the
portal's own services use, and the token the portal's own, handed to the job outside its script and its run
directory."""

from __future__ import annotations

import io
import stat
import uuid
from types import SimpleNamespace

import pytest

from clusters import crypto
from clusters.backends.base import LogChunk, NodeInfo, SubmitRequest
from clusters.backends.kind import ActionRefused, NotebookAddress, NotebookNotReady
from clusters.backends.slurm_family import notebook
from core.choices import SessionKind
from jobs import session_tokens
from jobs.builtin import builtin_definitions
from jobs.models import Job
from jobs.submission import submit_request
from sessions import notebook as sessions_notebook
from sessions.notebook import PREFIX

CLUSTER = SimpleNamespace(port=22, api_url="")


class Backend:
    """The backend interface the address needs: the port file, the job's nodes and the nodes' addresses."""

    def __init__(self, text: str | None, nodes=("gpu01",), addresses=None):
        self.text, self.job_node_list = text, list(nodes)
        self.addresses = addresses if addresses is not None else {"gpu01": "10.1.0.5", "gpu02": "10.1.0.6"}

    def read_job_file(self, job_id, name, offset, limit):
        assert name == ".gpulab-notebook.json"
        if self.text is None:
            return LogChunk(offset=0, data="", eof=True, exists=False)
        return LogChunk(offset=len(self.text), data=self.text, eof=True)

    def job_nodes(self, scheduler_id):
        return self.job_node_list

    def nodes(self):
        return [NodeInfo(name, address, gpus=1, state="ALLOCATED") for name, address in self.addresses.items()]


JOB = SimpleNamespace(pk=uuid.uuid4(), scheduler_id="42", cluster=CLUSTER)


def test_the_address_is_the_schedulers_address_of_the_jobs_node_and_the_reported_port():
    found = notebook.address(Backend('{"port": 8890}'), JOB)
    assert found.url == "http://10.1.0.5:8890"


@pytest.mark.parametrize(
    "host",
    [
        "gpu01.attacker.example",  # first label the node's name, resolving elsewhere
        "10.9.9.9",
        "127.0.0.1",
        "localhost",
        "gpu02",  # another node of the cluster, not this job's
    ],
)
def test_a_host_the_job_writes_is_never_where_the_portal_connects(host):
    text = f'{{"host": "{host}", "port": 8890, "token": "{"s" * 43}"}}'
    found = notebook.address(Backend(text), JOB)
    assert found.url == "http://10.1.0.5:8890" and found.token == ""  # the token comes from the job's row


def test_an_ipv6_node_address_is_bracketed():
    assert notebook.address(Backend('{"port": 8890}', addresses={"gpu01": "fd00::5"}), JOB).url == (
        "http://[fd00::5]:8890"
    )


def test_a_session_that_has_not_written_its_port_is_starting():
    with pytest.raises(NotebookNotReady):
        notebook.address(Backend(None), JOB)


def test_a_node_the_scheduler_gives_no_address_for_is_refused():
    with pytest.raises(ActionRefused, match="no usable address"):
        notebook.address(Backend('{"port": 8890}', addresses={"gpu01": "bad/addr"}), JOB)


@pytest.mark.parametrize("text", ['{"port": 8799}', '{"port": 9000}', '{"port": 22}', '{"port": "x"}', "not json"])
def test_a_port_outside_the_portals_range_is_refused(text):
    with pytest.raises(ActionRefused):
        notebook.address(Backend(text), JOB)


def test_the_portals_own_services_are_refused_even_inside_the_range(settings):
    settings.GPULAB_NOTEBOOK_PORTS = (1024, 65535)
    settings.REDIS_URL = "redis://127.0.0.1:7379/0"
    settings.PORTAL_URL = "https://portal.example:8443"
    cluster = SimpleNamespace(port=2222, api_url="http://127.0.0.1:6820")
    job = SimpleNamespace(pk=JOB.pk, scheduler_id="42", cluster=cluster)
    for port in (6379, 5432, 6817, 6818, 6819, 22, 7379, 8443, 2222, 6820):
        with pytest.raises(ActionRefused, match="none of its own services"):
            notebook.address(Backend(f'{{"port": {port}}}'), job)
    assert notebook.address(Backend('{"port": 8890}'), job).url.endswith(":8890")


def test_the_ports_a_job_is_told_leave_out_the_denied_ones_inside_the_range(settings):
    settings.GPULAB_NOTEBOOK_PORTS = (6300, 6400)
    environment = notebook.session_environment(CLUSTER, "t" * 43)
    assert environment["GPULAB_SESSION_PORTS"] == "6300-6400"
    assert "6379" in environment["GPULAB_SESSION_PORTS_EXCEPT"].split()


def test_the_template_takes_the_portals_token_and_keeps_jupyters_runtime_files_outside_the_run_directory():
    body = next(d for d in builtin_definitions() if d["slug"] == "jupyterlab")["body"]
    assert f'--ServerApp.base_url="{PREFIX.format(job_id="$GPULAB_JOB_ID")}"' in body
    assert 'runtime="${PWD%/jobs/*}/.gpulab-runtime/$GPULAB_JOB_ID"' in body  # beside jobs/, outside the run dir
    assert 'JUPYTER_RUNTIME_DIR="$runtime"' in body and 'rm -f "$runtime/session.env"' in body
    assert 'JUPYTER_TOKEN="$GPULAB_SESSION_TOKEN"' in body and "--ServerApp.token" not in body  # not in `ps`
    assert "secrets.token" not in body and ".jupyter-server.json" not in body  # the job makes no token, writes none
    assert "--ServerApp.port_retries=0" in body  # never another port than the one it reported
    assert '"$runtime/session.env"' in body and '. "$runtime' not in body  # read, never sourced


def test_the_session_file_has_only_safe_values_and_the_job_reads_it_without_running_it():
    text = notebook.session_file(CLUSTER, "tok-en_" + "x" * 40)
    assert text.splitlines()[0] == "GPULAB_SESSION_TOKEN=tok-en_" + "x" * 40
    with pytest.raises(ActionRefused):
        notebook.session_file(CLUSTER, "$(touch /tmp/x)")


class MemorySftp:
    """Enough of an SFTP channel to see what the backend writes, with which modes."""

    def __init__(self):
        self.dirs: dict[str, int] = {}
        self.files: dict[str, io.StringIO] = {}
        self.modes: dict[str, int] = {}
        self.mode_before_write: dict[str, int] = {}

    def stat(self, path):
        if path not in self.dirs:
            raise FileNotFoundError(path)
        return SimpleNamespace(st_mode=stat.S_IFDIR | self.dirs[path])

    def mkdir(self, path, mode=0o777):
        self.dirs[path] = mode

    def chmod(self, path, mode):
        (self.dirs if path in self.dirs else self.modes)[path] = mode

    def open(self, path, mode):
        sftp, buffer = self, io.StringIO()
        self.files[path] = buffer

        class Handle:
            def chmod(self, mode):
                sftp.modes[path] = mode

            def write(self, text):
                sftp.mode_before_write.setdefault(path, sftp.modes.get(path, 0o644))
                buffer.write(text)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        return Handle()


def test_over_ssh_the_token_goes_to_a_private_file_outside_the_run_directory_never_into_the_script(
    monkeypatch, cluster
):
    from contextlib import contextmanager

    from clusters.backends import ssh
    from clusters.backends.kinds.slurm.backend import SlurmBackend

    sftp, ran = MemorySftp(), []

    @contextmanager
    def channel(*args, **kwargs):
        yield sftp

    monkeypatch.setattr(ssh, "sftp", channel)
    backend = SlurmBackend(cluster, cluster.service_account())
    monkeypatch.setattr(backend, "_write_script", lambda request: "/home/labsvc/gpulab-test/jobs/x")
    monkeypatch.setattr(backend, "_run", lambda argv, stdin="": ran.append((argv, stdin)) or ok("77"))
    token = "p" * 43
    script = "#!/bin/bash\necho hi\n"
    job_id = uuid.uuid4()
    assert backend.submit(SubmitRequest(job_id=job_id, script=script, session_token=token)) == "77"
    path = f"gpulab-test/.gpulab-runtime/{job_id}/session.env"
    assert f"GPULAB_SESSION_TOKEN={token}\n" in sftp.files[path].getvalue()
    assert sftp.mode_before_write[path] == 0o600 and sftp.dirs[f"gpulab-test/.gpulab-runtime/{job_id}"] == 0o700
    assert not any(token in " ".join(argv) + stdin for argv, stdin in ran)  # neither sbatch's words nor its input
    assert "/jobs/" not in path
    assert token not in repr(SubmitRequest(job_id=job_id, script=script, session_token=token))  # never logged


def ok(stdout: str):
    from clusters.backends.ssh import CommandResult

    return CommandResult(0, stdout, "", stdout.encode())


def test_through_slurmrestd_the_token_is_in_the_jobs_environment_never_in_its_script(monkeypatch, cluster):
    from clusters.backends.kinds.slurm_rest import versions
    from clusters.backends.kinds.slurm_rest.backend import SlurmRestBackend

    sent = []
    actor = SimpleNamespace(request=lambda method, path, body=None: sent.append(body) or (200, {"job_id": 9}))
    backend = SlurmRestBackend(cluster, cluster.service_account())
    monkeypatch.setattr(backend, "_prove_own_account", lambda: None)
    monkeypatch.setattr(backend, "version", lambda: versions.VERSIONS[-1])
    monkeypatch.setattr(backend, "_job_files", lambda job_id: ("/w", "/w/slurm.out", "/home/labsvc"))
    monkeypatch.setattr(backend, "_actor", lambda: actor)
    token = "r" * 43
    script = "#!/bin/bash\n#SBATCH --job-name=x\necho hi\n"
    assert backend.submit(SubmitRequest(job_id=uuid.uuid4(), script=script, session_token=token)) == "9"
    assert sent[0]["job"]["environment"]["GPULAB_SESSION_TOKEN"] == token
    assert token not in sent[0]["script"]


@pytest.fixture
def notebook_job(make_job, alice, sleep_template):
    sleep_template.session = SessionKind.JUPYTERLAB
    sleep_template.save()
    return make_job(alice, seconds=60)


def test_the_portal_makes_a_sessions_token_once_keeps_it_encrypted_and_never_puts_it_in_the_script(notebook_job):
    first = submit_request(notebook_job).session_token
    assert len(first) >= 40
    again = submit_request(Job.objects.get(pk=notebook_job.pk)).session_token  # a retried submit
    assert again == first
    stored = Job.objects.values_list("session_token_encrypted", flat=True).get(pk=notebook_job.pk)
    assert first not in stored and crypto.decrypt(stored) == first
    assert first not in notebook_job.script


def test_a_batch_job_gets_no_token(make_job, alice):
    assert submit_request(make_job(alice, seconds=1)).session_token == ""


def test_the_proxy_sends_the_portals_token_whatever_the_kind_or_a_file_says(monkeypatch, notebook_job, settings):
    from clusters import kinds

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    token = session_tokens.ensure(notebook_job)
    kind = type(kinds.kind_of(notebook_job.cluster.kind))
    monkeypatch.setattr(kind, "notebook_address", lambda self, job: NotebookAddress("http://10.1.0.5:8890", "planted"))
    sessions_notebook.forget(notebook_job.pk)
    assert sessions_notebook.address(Job.objects.get(pk=notebook_job.pk)).token == token


def test_a_session_launched_before_the_portal_kept_tokens_is_refused(monkeypatch, notebook_job, settings):
    from clusters import kinds

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    kind = type(kinds.kind_of(notebook_job.cluster.kind))
    monkeypatch.setattr(kind, "notebook_address", lambda self, job: NotebookAddress("http://10.1.0.5:8890", ""))
    sessions_notebook.forget(notebook_job.pk)
    with pytest.raises(ActionRefused, match="launch it again"):
        sessions_notebook.address(notebook_job)


def test_a_slurm_rest_cluster_without_its_login_node_refuses_a_jupyterlab_launch_in_words():
    """The server's port is read over SSH: a session launched there could never be opened."""
    from clusters.backends.kind import RenderRefused, RenderRequest
    from clusters.kinds import kind_of

    cluster = SimpleNamespace(host="", display_name="REST only")
    template = SimpleNamespace(session="jupyterlab")
    request = RenderRequest(job_id=JOB.pk, values={}, template=template, course=None, user=None, cluster=cluster)
    with pytest.raises(RenderRefused, match="add the login node"):
        kind_of("slurm-rest").render(request)
