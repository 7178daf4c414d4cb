"""JupyterLab on Kubernetes: the built-in template's Deployment and Service, the token Secret the portal makes at
submit, and the API server's service proxy to a real JupyterLab (the lab's Python, scripts/lab_venv.sh) that the test
starts where the kubelet would start the pod's container, registered as the Service's endpoint. The portal signs in
to the API server with a bearer token or a client certificate (kubeadm's admin.conf, kind, minikube); the emulated
API server checks the certificate against its client CA, so a proxy that stopped presenting it would fail here."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
from pathlib import Path

import pytest
import requests
from playwright.sync_api import expect
from websockets.exceptions import InvalidStatus

from clusters.backends.kinds.kubernetes import notebook
from jobs import session_tokens
from jobs.models import Job
from sessions import notebook as portal_notebook

from .conftest import wait_for
from .k8s import make_client_ca, make_client_certificate
from .notebooks import Browserless, new_notebook_cell, run_code, type_and_run
from .test_browser import log_in, page  # noqa: F401  (the Chromium page fixture)
from .test_k8s_jobs import NS, launch, owned
from .test_terminal import SHOTS

LAB_VENV = os.environ.get("GPULAB_LAB_VENV", "/opt/gpulab-lab-venv")
LAB = {"gpus": 0, "cpu": 1, "memory_gib": 2, "time_minutes": 30}
BOTH_SIGN_INS = pytest.mark.parametrize("k8s_sign_in", ["token", "client-certificate"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code in (200, 403)
    except requests.ConnectionError:
        return False


def session_token(kube, job) -> str:
    (secret,) = owned(kube, f"/api/v1/namespaces/{NS}/secrets", job)
    return base64.b64decode(secret["data"]["token"]).decode()


def pod_environment(kube, job, deployment: dict, root: Path) -> dict[str, str]:
    """What the kubelet gives the lab container besides its token: each ConfigMap volume's keys as files at its mount
    path (under `root`, this machine's stand-in for the container's file system) and the literal env values, paths
    moved under `root` too."""
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    maps = {m["metadata"]["name"]: m["data"] for m in owned(kube, f"/api/v1/namespaces/{NS}/configmaps", job)}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        folder = root / mount["mountPath"].lstrip("/")
        folder.mkdir(parents=True, exist_ok=True)
        for key, text in maps[volumes[mount["name"]]["configMap"]["name"]].items():
            (folder / key).write_text(text)
    moved = lambda value: str(root / value.lstrip("/")) if value.startswith("/") else value  # noqa: E731
    return {e["name"]: moved(e["value"]) for e in container["env"] if "value" in e}


@pytest.fixture
def lab_pod(kube, tmp_path):
    """Start the job's JupyterLab as its pod would (same args, env and ConfigMap files, token from the Secret) and
    route its Service to it."""
    started = []

    def start(job, deployment: dict) -> str:
        python = f"{LAB_VENV}/bin/python"
        if not os.path.exists(python):
            pytest.fail(f"{LAB_VENV} is missing; `make test` builds it (scripts/lab_venv.sh)")
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        port = free_port()
        args = [a for a in container["args"] if not a.startswith(("--ip=", "--port="))]
        (tmp_path / "work").mkdir(exist_ok=True)  # the pod's home, without the test's own files in it
        args += ["--ip=127.0.0.1", f"--port={port}", f"--ServerApp.root_dir={tmp_path / 'work'}"]
        args += ["--allow-root"] if os.geteuid() == 0 else []  # the image runs it as jovyan; this machine as root
        env = {**os.environ, **pod_environment(kube, job, deployment, tmp_path / "pod")}
        env.update(JUPYTER_TOKEN=session_token(kube, job), HOME=str(tmp_path))
        log = (tmp_path / "jupyter.log").open("w")
        started.append(
            subprocess.Popen([python, "-m", "jupyterlab", *args], env=env, stdout=log, stderr=subprocess.STDOUT)
        )
        url = f"http://127.0.0.1:{port}"
        status = f"{url}/jobs/{job.pk}/lab/api/status"
        wait_for(lambda: answers(status), what="JupyterLab to listen", timeout=120)
        (service,) = owned(kube, f"/api/v1/namespaces/{NS}/services", job)
        kube.route_service(NS, service["metadata"]["name"], url)
        return url

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=20)


def through_route(found: notebook.ServiceRoute, path: str, ca_file, cert=True, **params) -> requests.Response:
    """What the portal's proxy sends for `path` (the server's own path): the route's headers, client certificate
    (`cert`: the route's, or another pair of files, or None) and token, TLS checked against the route's CA."""
    ca_file.write_text(found.ca_pem)
    query = {"token": found.token, **params}
    if cert is True:
        cert = (found.cert_file, found.key_file) if found.cert_file else None
    return requests.get(
        found.url + path,
        headers=found.headers,
        params=query,
        verify=str(ca_file),
        cert=cert,
        timeout=30,
        allow_redirects=False,
    )


@BOTH_SIGN_INS
def test_the_template_makes_a_deployment_a_service_and_a_token_only_the_portal_holds(
    worker, api_for, alice, k8s_cluster, k8s_templates, kube, job_state, lab_pod, tmp_path, k8s_sign_in
):
    ca_file = tmp_path / "apiserver-ca.pem"
    job = job_state(launch(api_for, alice, "k8s-jupyterlab", LAB), "pending")
    (deployment,) = owned(kube, f"/apis/apps/v1/namespaces/{NS}/deployments", job)
    (service,) = owned(kube, f"/api/v1/namespaces/{NS}/services", job)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert f"--ServerApp.base_url=/jobs/{job.pk}/lab/" in container["args"]
    assert container["env"][0]["valueFrom"]["secretKeyRef"]["name"] == f"{deployment['metadata']['name']}-session"
    token = session_token(kube, job)
    assert len(token) >= 32 and token not in job.script  # the page shows the script; the token is not in it
    assert token == session_tokens.of(Job.objects.get(pk=job.pk))  # the portal's, kept on the job's row
    assert service["spec"]["ports"][0]["port"] == 8888

    with pytest.raises(notebook.NotReady):  # no pod yet: the page says it is starting
        notebook.route(job)
    lab_pod(job, deployment)
    kube.start_pod(deployment, f"lab-{job.pk.hex[:8]}", phase="Running", ready=True)
    job = job_state(job, "running")
    found = notebook.route(job)
    assert found.url.startswith(kube.url + f"/api/v1/namespaces/{NS}/services/{service['metadata']['name']}:8888/")
    assert found.token == token
    if k8s_sign_in == "token":
        assert found.headers["Authorization"].startswith("Bearer ") and not found.cert_file
    else:  # the files the official client wrote from the kubeconfig; the route holds their names, not the key
        assert found.headers == {} and found.cert_file and found.key_file
        assert "PRIVATE KEY" in Path(found.key_file).read_text() and "PRIVATE KEY" not in repr(found)

    answer = through_route(found, f"/jobs/{job.pk}/lab/api/status", ca_file)
    assert answer.status_code == 200 and "started" in answer.json()
    # The ConfigMap's defaults reached the server: JupyterLab does not ask about its news feed.
    settings = f"/jobs/{job.pk}/lab/lab/api/settings/@jupyterlab/apputils-extension:notification"
    news = through_route(found, settings, ca_file)
    assert news.json()["schema"]["properties"]["fetchNews"]["default"] == "false", news.text[:300]
    lab_page = through_route(found, f"/jobs/{job.pk}/lab/lab", ca_file)
    assert lab_page.status_code == 200 and f"{found.rewritten_prefix}/jobs/{job.pk}/lab/static/" in lab_page.text
    assert through_route(found, f"/jobs/{job.pk}/lab/api/status", ca_file, token="").status_code == 403
    if k8s_sign_in == "client-certificate":  # the API server checks the certificate: without it, nobody signs in
        kube.clear_requests()
        assert through_route(found, f"/jobs/{job.pk}/lab/api/status", ca_file, cert=None).status_code == 401
        stranger_ca = make_client_ca(tmp_path, "another-ca")
        stranger = make_client_certificate(tmp_path, stranger_ca[1:], "gpulab-portal")  # same name, wrong CA
        with pytest.raises(requests.exceptions.ConnectionError):  # TLS refuses it (TLS 1.3: after the handshake)
            other = (stranger.cert_file, stranger.key_file)
            through_route(found, f"/jobs/{job.pk}/lab/api/status", ca_file, cert=other)
        # Neither reached the service proxy (the worker's own polls of the pods may come meanwhile).
        assert not any("/proxy/" in line for line in kube.requests())


def test_cancel_deletes_the_token_secret_with_the_session(
    worker, api_for, alice, k8s_cluster, k8s_templates, kube, job_state
):
    job = job_state(launch(api_for, alice, "k8s-jupyterlab", LAB), "pending")
    assert owned(kube, f"/api/v1/namespaces/{NS}/secrets", job)
    api_for(alice).post(f"/api/v1/jobs/{job.pk}/cancel/")
    job_state(job, "cancelled")
    assert owned(kube, f"/api/v1/namespaces/{NS}/secrets", job) == []


@pytest.fixture
def k8s_lab(worker, web, api_for, alice, k8s_cluster, k8s_templates, kube, job_state, lab_pod):
    """A running JupyterLab job on Kubernetes whose server answers through the emulated service proxy."""
    job = job_state(launch(api_for, alice, "k8s-jupyterlab", LAB), "pending")
    (deployment,) = owned(kube, f"/apis/apps/v1/namespaces/{NS}/deployments", job)
    lab_pod(job, deployment)
    kube.start_pod(deployment, f"lab-{job.pk.hex[:8]}", phase="Running", ready=True)
    job = job_state(job, "running")
    Browserless(web, alice, job).wait_ready()
    return job


@pytest.mark.parametrize("k8s_sign_in", ["token", "client-certificate", "api-token"])
@pytest.mark.timeout(300)
def test_owner_runs_torch_in_a_kernel_through_the_portal_and_the_api_servers_service_proxy(k8s_lab, web, alice, kube):
    lab = Browserless(web, alice, k8s_lab)
    lab_page = lab.get("lab")
    assert lab_page.status_code == 200 and "JupyterLab" in lab_page.text
    assert session_token(kube, k8s_lab) not in lab_page.text  # the portal added it; the browser never sees it
    assert "/api/v1/namespaces/" not in lab_page.text  # the API server's link rewriting is taken out again
    assert f'src="/jobs/{k8s_lab.pk}/lab/static/' in lab_page.text
    kernel = lab.post("api/kernels", {"name": "python3"})
    assert kernel.status_code == 201, kernel.text
    # The portal's own GETs (requests, not the proxy) sign in the same way: the session page's readiness, and
    # the idle reaper's look at the kernels.
    ready = lab.http.get(f"{web.url}/jobs/{k8s_lab.pk}/jupyter/ready/", timeout=30).json()
    assert ready["phase"] == "ready", ready
    assert portal_notebook.last_kernel_activity(k8s_lab)[1] is not None
    with lab.socket(f"api/kernels/{kernel.json()['id']}/channels") as socket:  # relayed by the service proxy
        out = run_code(socket, "import torch; print(torch.__version__)")
    assert out.strip().startswith("2."), out
    assert any("/services/" in line and "/proxy/jobs/" in line for line in kube.requests())


@pytest.mark.timeout(300)
def test_other_students_get_404_on_the_kubernetes_notebooks_urls_and_sockets(k8s_lab, web, alice, bob, carol, kube):
    kernel = Browserless(web, alice, k8s_lab).post("api/kernels", {"name": "python3"}).json()
    kube.clear_requests()
    for user in (bob, carol):
        other = Browserless(web, user, k8s_lab)
        for path in ["lab", "api/status", "api/kernels", f"api/kernels/{kernel['id']}"]:
            assert other.get(path).status_code == 404, path
        assert other.post("api/kernels", {"name": "python3"}).status_code == 404
        with pytest.raises(InvalidStatus) as refused:
            other.socket(f"api/kernels/{kernel['id']}/channels")
        assert refused.value.response.status_code == 404
    assert not any("/proxy/" in line for line in kube.requests())  # refused before anything reached the cluster


@BOTH_SIGN_INS
@pytest.mark.browser
@pytest.mark.timeout(400)
def test_student_opens_jupyterlab_on_kubernetes_from_the_job_page_and_runs_torch_in_a_notebook(
    k8s_lab,
    web,
    page,  # noqa: F811
):
    page.set_viewport_size({"width": 1366, "height": 900})
    log_in(page, web, "alice")
    page.goto(f"{web.url}/jobs/{k8s_lab.pk}/")
    page.click("#open-notebook")
    expect(page.locator("#time-left")).to_contain_text("min")  # the template's time limit, from the kind
    lab = page.frame_locator("#notebook-frame")
    editor = new_notebook_cell(lab)
    output = type_and_run(page, lab, editor, "import torch; print(torch.__version__)")
    try:
        expect(output).to_contain_text("2.", timeout=60_000)  # through the portal, the API server, the kernel
    except AssertionError:
        page.screenshot(path=f"{SHOTS}/gpulab-k8s-jupyterlab-failed.png", full_page=True)
        raise
    page.screenshot(path=f"{SHOTS}/gpulab-k8s-jupyterlab-laptop.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(page.locator("#open-jupyterlab")).to_be_visible()
    assert "Notebooks live in the session's pod" in page.content()  # not the SLURM run directory's promise
    page.screenshot(path=f"{SHOTS}/gpulab-k8s-jupyterlab-phone.png", full_page=True)
