"""KubeRay's RayJob through the real pages, API and worker, against the emulated API server with the RayJob and
RayCluster CRDs registered from KubeRay's published schema (v1.4.2, clusters/backends/kinds/kubernetes/crds/): the
built-in fine-tuning template admitted by Kueue, running and succeeding; a RayJob whose Ray cluster never comes up;
and the Ray dashboard proxied to its owner alone. The tests play KubeRay's operator (tests/integration/kuberay.py),
Kueue's controller and the kubelet; a small HTTP server plays the Ray head's dashboard, as the JupyterLab tests play
the notebook server."""

from __future__ import annotations

import html
import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest
import requests

from clusters.models import AuthMethod, Cluster, ClusterAccount
from jobs.models import Job, QueueStep

from .conftest import K8S_TOKEN, wait_for
from .kuberay import KubeRay
from .test_k8s_kueue import QUEUE, kueue, kueue_kube, reason_has  # noqa: F401  (the Kueue emulator and controller)
from .ws import session_cookie

NS = "gpulab-hpc"
FINETUNE = {"gpus": 1, "image": "gpulab/tinylm-trainer:0.1.0-ray-cpu", "max_steps": 300, "lr": 0.0002}


def connect(cluster: Cluster, kube) -> Cluster:
    account = ClusterAccount(cluster=cluster, username="gpulab-portal", auth_method=AuthMethod.KUBECONFIG)
    account.set_secret(kube.kubeconfig(K8S_TOKEN))
    account.save()
    return cluster


@pytest.fixture
def ray_cluster(transactional_db, course, kueue_kube):  # noqa: F811
    """A cluster where Test connection found KubeRay (and no Kueue)."""
    kueue_kube.deny()
    cluster = Cluster.objects.create(
        name="k8s", title="Ray cluster", kind="kubernetes", kind_settings={"kube_addons": {"kuberay": True}}
    )
    course.clusters.add(connect(cluster, kueue_kube))
    return cluster


@pytest.fixture
def ray_kueue_cluster(transactional_db, course, kueue_kube):  # noqa: F811
    """A cluster with KubeRay and Kueue: course queues in cohort “lab”."""
    kueue_kube.deny()
    kueue_kube.pend(QUEUE, [])
    addons = {"kueue": True, "kueue_visibility": True, "kuberay": True}
    cluster = Cluster.objects.create(
        name="k8s",
        title="Ray and Kueue cluster",
        kind="kubernetes",
        kind_settings={"kube_addons": addons, "kueue_cohort": "lab"},
    )
    course.clusters.add(connect(cluster, kueue_kube))
    return cluster


@pytest.fixture
def kuberay(kueue_kube):  # noqa: F811
    return KubeRay(kueue_kube, NS)


def launch(api_for, user, **params) -> Job:
    response = api_for(user).post(
        "/api/v1/jobs/",
        {"template": "k8s-ray-finetune", "cluster": "k8s", "params": {**FINETUNE, **params}},
        format="json",
    )
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def page_of(login, user, job: Job) -> str:
    return html.unescape(login(user).get(job.get_absolute_url()).content.decode())


def test_a_rayjob_waits_in_the_course_queue_is_admitted_runs_and_succeeds(
    worker,
    login,
    api_for,
    alice,
    course,
    ray_kueue_cluster,
    k8s_templates,
    kueue_kube,  # noqa: F811
    kueue,  # noqa: F811
    kuberay,
    job_state,
):
    job = job_state(launch(api_for, alice), "pending")
    rayjob, path = kuberay.rayjob(job)
    spec = rayjob["spec"]
    # What the template made of the values, as the API server (KubeRay's published schema) accepted it.
    assert rayjob["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == QUEUE and spec["suspend"] is True
    assert spec["shutdownAfterJobFinishes"] is True and spec["activeDeadlineSeconds"] == 120 * 60
    assert spec["entrypoint"].startswith("python /app/trainer/train.py --model tiny --max_steps 300 --lr 0.0002 ")
    assert spec["entrypointNumGpus"] == 1 and spec["entrypointResources"] == '{"trainer": 1}'
    worker_pod = spec["rayClusterSpec"]["workerGroupSpecs"][0]["template"]
    assert worker_pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    for template in (spec["rayClusterSpec"]["headGroupSpec"]["template"], worker_pod, spec["submitterPodTemplate"]):
        assert template["metadata"]["labels"]["gpulab.io/job"] == str(job.pk)
    assert job.gpus == 1

    # Suspended until Kueue admits it: the wait is Kueue's, in Kueue's words.
    kuberay.suspended(path)
    workload = kueue.workload_for(rayjob, kind="RayJob")
    assert [s["name"] for s in kueue_kube.get(workload)["spec"]["podSets"]] == ["head", "trainer", "submitter"]
    kueue.no_quota(workload, more=1)
    job = reason_has(job, "it needs 1 more nvidia.com/gpu than the course's ClusterQueue has free")

    kueue.admit(workload, path, QUEUE)
    assert kueue_kube.get(path)["spec"]["suspend"] is False
    cluster = kuberay.initialize(rayjob, path)
    unschedulable = kueue_kube.unschedulable("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
    head = kuberay.pod(rayjob, cluster, "head", phase="Running", ready=True)
    trainer = kuberay.pod(rayjob, cluster, "worker", phase="Pending", **unschedulable)
    job = reason_has(
        job, "Starting the Ray cluster: worker (trainer): Not scheduled: no node has a free nvidia.com/gpu"
    )
    assert job.state == "pending"  # the head runs, but the Ray cluster is not up: the job has not started

    kueue_kube.set_pod(NS, trainer, phase="Running", ready=True)
    kuberay.head_service(cluster)
    kuberay.ready(path, cluster)
    submitter = kuberay.pod(rayjob, cluster, "submitter", phase="Running")
    job = job_state(job, "running")
    assert f"Ray cluster {cluster} is up; the Ray job waits to start (PENDING)" in job.scheduler_reason
    kueue.pods_ready(workload)
    kuberay.ray_job(path, "RUNNING")
    job = reason_has(job, f"The Ray job runs on Ray cluster {cluster}")
    # The submitter's log (the entrypoint's output, `ray job logs --follow`) comes first, then the head's.
    names = api_for(alice).get(f"/api/v1/jobs/{job.pk}/streams/").json()["streams"]
    assert names[0].startswith(f"{submitter}/") and names[1].startswith(f"{head}/"), names

    kuberay.complete(path, "SUCCEEDED")
    kuberay.remove_cluster(cluster, [head, trainer, submitter])
    kueue.finish(workload)
    job = job_state(job, "completed")
    assert job.exit_code == 0 and job.error == ""
    wait_for(lambda: QueueStep.objects.filter(job=job, condition="Finished").exists(), what="finished in Kueue")
    timeline = page_of(login, alice, job)
    for step in (
        "Admitted by Kueue: its pods may start",
        f"The scheduler reports Running (Ray cluster {cluster} is up; the Ray job waits to start (PENDING)",
        "The scheduler reports Complete (The Ray job succeeded).",
    ):
        assert step in timeline, step


def test_a_rayjob_whose_ray_cluster_never_comes_up_fails_with_kuberays_message(
    worker,
    login,
    api_for,
    alice,
    ray_cluster,
    k8s_templates,
    kueue_kube,  # noqa: F811
    kuberay,
    job_state,
):
    job = job_state(launch(api_for, alice, gpus=0), "pending")
    rayjob, path = kuberay.rayjob(job)
    assert "suspend" not in rayjob["spec"] and "kueue.x-k8s.io/queue-name" not in rayjob["metadata"]["labels"]
    cluster = kuberay.initialize(rayjob, path)
    refused = (
        f'pods "{cluster}-head-8x2kq" is forbidden: exceeded quota: gpulab-quota, requested: limits.memory=2Gi, '
        "used: limits.memory=95Gi, limited: limits.memory=96Gi"
    )
    kuberay.cannot_create_pods(cluster, refused)
    job = reason_has(job, "Starting the Ray cluster: KubeRay cannot create its pods (FailedCreateHeadPod: pods")
    assert "exceeded quota: gpulab-quota" in job.scheduler_reason and job.state == "pending"

    kuberay.past_deadline(path, 7200)
    job = job_state(job, "failed")
    assert job.scheduler_state == "DeadlineExceeded" and job.exit_code is None
    assert job.error.startswith(
        "The Ray cluster never came up: KubeRay cannot create its pods (FailedCreateHeadPod: pods "
    )
    assert (
        "; KubeRay stopped it at the job's time limit. (KubeRay: The RayJob has passed the activeDeadlineSeconds."
        in (job.error)
    )
    page = page_of(login, alice, job)
    assert "The Ray cluster never came up" in page and "The scheduler reports DeadlineExceeded" in page


# -- the Ray dashboard -------------------------------------------------------------------------------------------
@pytest.fixture
def ray_head():
    """The Ray head's dashboard, as far as the proxy can tell: a page with a relative script and an absolute link, a
    JSON API, and anything else echoed; it records each path and the headers it came with."""
    seen: list[tuple[str, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, dict(self.headers)))
            if self.path == "/":
                body = b'<html><head><script src="./static/js/main.js"></script><link rel="icon" href="/favicon.ico">'
                body += b"</head><body>Ray Dashboard</body></html>"
                kind = "text/html"
            elif self.path == "/api/jobs/":
                body, kind = json.dumps([{"job_id": "raysubmit_1", "status": "RUNNING"}]).encode(), "application/json"
            else:
                body, kind = json.dumps({"path": self.path}).encode(), "application/json"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Set-Cookie", "ray=1; Path=/")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield SimpleNamespace(url=f"http://127.0.0.1:{server.server_address[1]}", seen=seen)
    server.shutdown()


@pytest.fixture
def running_rayjob(worker, api_for, alice, ray_cluster, k8s_templates, kueue_kube, kuberay, job_state, ray_head):  # noqa: F811
    """Alice's RayJob, running, its head service routed to the test's dashboard."""
    job = job_state(launch(api_for, alice), "pending")
    rayjob, path = kuberay.rayjob(job)
    cluster = kuberay.initialize(rayjob, path)
    kuberay.pod(rayjob, cluster, "head", phase="Running", ready=True)
    kuberay.pod(rayjob, cluster, "worker", phase="Running", ready=True)
    service = kuberay.head_service(cluster)
    kueue_kube.route_service(NS, service, ray_head.url)
    kuberay.ready(path, cluster)
    kuberay.ray_job(path, "RUNNING")
    job = job_state(job, "running")
    return SimpleNamespace(job=job, cluster=cluster, service=service, path=path)


def get(web, user, path: str, **kwargs) -> requests.Response:
    session = requests.Session()
    if user is not None:
        session.cookies.set("sessionid", session_cookie(user))
    return session.get(web.url + path, timeout=30, allow_redirects=False, **kwargs)


def raw_get(web, user, target: str) -> int:
    """GET with the request target exactly as written (no client-side clean-up of `..` or `//`)."""
    address = urlsplit(web.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.putrequest("GET", target, skip_accept_encoding=True)
        connection.putheader("Cookie", f"sessionid={session_cookie(user)}")
        connection.endheaders()
        return connection.getresponse().status
    finally:
        connection.close()


@pytest.mark.timeout(300)
def test_the_ray_dashboard_is_proxied_to_its_owner_only_and_to_that_head_only(
    running_rayjob,
    web,
    login,
    alice,
    bob,
    carol,
    ta,
    instructor,
    kueue_kube,  # noqa: F811
    ray_head,
):
    job, service = running_rayjob.job, running_rayjob.service
    base = f"/jobs/{job.pk}/dashboard/"
    # The job page offers it to its owner, and says whose it is to the others who may see the job.
    assert f'id="open-dashboard" href="{base}"' in page_of(login, alice, job)
    for teacher in (ta, instructor):
        assert "The Ray dashboard opens for the student who launched this job." in page_of(login, teacher, job)

    kueue_kube.clear_requests()
    page = get(web, alice, base)
    assert page.status_code == 200, page.text
    assert "Ray Dashboard" in page.text and 'src="./static/js/main.js"' in page.text
    # The API server rewrote the absolute link to its proxy path; the portal puts its own path back.
    assert f'href="{base}favicon.ico"' in page.text and "/api/v1/namespaces/" not in page.text
    assert "set-cookie" not in {k.lower() for k in page.headers}  # the head's cookies stay off the portal's origin
    jobs = get(web, alice, base + "api/jobs/")
    assert jobs.status_code == 200 and jobs.json() == [{"job_id": "raysubmit_1", "status": "RUNNING"}]
    paths = [path for path, _ in ray_head.seen]
    assert paths[:2] == ["/", "/api/jobs/"]
    for _, headers in ray_head.seen:  # the portal's session never reaches the head
        assert "sessionid" not in headers.get("Cookie", "") and "Authorization" not in headers
    proxied = [line for line in kueue_kube.requests() if "/proxy" in line]
    assert proxied and all(
        line.startswith(f"GET /api/v1/namespaces/{NS}/services/{service}:8265/proxy/") for line in proxied
    ), proxied

    # Nobody signed in: to the login page, and back after it. Another student: 404, as for a job that does not exist.
    # The course's TA and instructor see the job but not its dashboard (the owner alone, as for JupyterLab): 403.
    anonymous = get(web, None, base + "api/jobs/")
    assert anonymous.status_code == 302 and anonymous.headers["Location"] == f"/login/?next={base}api/jobs/"
    for user, status in ((bob, 404), (carol, 404), (ta, 403), (instructor, 403)):
        assert get(web, user, base).status_code == status, user.username
        assert get(web, user, base + "api/jobs/").status_code == status, user.username

    # Hostile paths: leaving the job's prefix goes nowhere (404 before anything is asked of the cluster); anything
    # under it, however it looks, reaches that head on that port and nothing else.
    kueue_kube.clear_requests()
    seen_before = len(ray_head.seen)
    for target in (
        base + "../../api/v1/jobs/",
        base + "%2e%2e/%2e%2e/%2e%2e/api/v1/namespaces/kube-system/secrets",
        base + "..%2f..%2f..%2fapi/v1/namespaces/other/services/db:5432/proxy/",
        base + "..\\..\\..\\admin/",
        f"/jobs/{job.pk}/dashboard-other/x",
    ):
        assert raw_get(web, alice, target) == 404, target
    assert len(ray_head.seen) == seen_before and not any("/proxy" in line for line in kueue_kube.requests())
    for target, head_path in (
        (base + "/evil.example/x", "/evil.example/x"),
        (base + "http://169.254.169.254/latest/meta-data", "/http:/169.254.169.254/latest/meta-data"),
        (base + "api/v1/namespaces/other/services/db:5432/proxy/", "/api/v1/namespaces/other/services/db:5432/proxy/"),
        (base + "a/../../dashboard/api/jobs/", "/api/jobs/"),  # resolved first: it never left the prefix
    ):
        assert raw_get(web, alice, target) == 200 and ray_head.seen[-1][0] == head_path, target
    proxied = [line for line in kueue_kube.requests() if "/proxy" in line]
    assert proxied and all(
        line.startswith(f"GET /api/v1/namespaces/{NS}/services/{service}:8265/proxy/") for line in proxied
    ), proxied


@pytest.mark.timeout(300)
def test_the_ray_dashboard_goes_with_the_job(running_rayjob, web, alice, api_for, kuberay, job_state):
    job = running_rayjob.job
    kuberay.complete(running_rayjob.path, "FAILED", "Job entrypoint command failed with exit code 1, last logs: …")
    job = job_state(job, "failed")
    assert job.exit_code == 1 and job.scheduler_state == "AppFailed"
    assert job.error.startswith("The Ray job failed. (KubeRay: Job entrypoint command failed with exit code 1")
    assert get(web, alice, f"/jobs/{job.pk}/dashboard/").status_code == 410


def test_a_poll_asks_for_the_namespaces_rayjobs_once_whatever_their_number(
    worker,
    api_for,
    alice,
    bob,
    course,
    ray_cluster,
    k8s_templates,
    kueue_kube,  # noqa: F811
    kuberay,
    job_state,
):
    """Three RayJobs in the course's namespace: a poll cycle lists the namespace's RayJobs once, never once per job."""
    from jobs.polling import poll_cluster

    jobs = [job_state(launch(api_for, user), "pending") for user in (alice, bob, alice)]
    for job in jobs:
        kuberay.initialize(*kuberay.rayjob(job))
    kueue_kube.clear_requests()
    report = poll_cluster(ray_cluster.pk)
    assert report.polled == 3 and not report.error
    # The session's worker may poll too: its cycles make the same calls, never one per job.
    asked = {r for r in kueue_kube.requests() if r.startswith("GET ") and r.split("?")[0].endswith("/rayjobs")}
    assert asked == {
        f"GET /apis/ray.io/v1/namespaces/{NS}/rayjobs?labelSelector=app.kubernetes.io/managed-by%3Dgpulab-portal"
    }
