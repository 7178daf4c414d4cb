"""Scale-out on the real stack: two web processes and two more Celery workers behind one PostgreSQL and Redis,
with one beat. A burst of launches through both web processes, each task also delivered twice, reaches SLURM
exactly once per job; WebSocket clients on either web process get every frame; /metrics on either process
describes the whole portal."""

from __future__ import annotations

import json
import threading
import urllib.request
import uuid

import pytest
from rest_framework.authtoken.models import Token

from core import logs
from core.choices import ON_SCHEDULER_STATES
from jobs.models import Job
from workers.tasks import submit_job

from .conftest import SHARED_GPUS_WAIT, Worker, slurm, start_web, wait_for
from .ws import Socket

BURST = 12


@pytest.fixture
def web_pair(portal_env, tmp_path):
    servers = [start_web({**portal_env, "LOG_FORMAT": "json"}, tmp_path / f"{name}.log") for name in ("web-a", "web-b")]
    yield servers
    for server in servers:
        server.stop()


@pytest.fixture
def worker_pair(worker, portal_env, tmp_path):
    """The session's worker (with the one beat) and a second worker process without beat, logging JSON."""
    replica = Worker({**portal_env, "LOG_FORMAT": "json"}, tmp_path, name="replica", beat=False)
    replica.start()
    yield worker, replica
    replica.stop()


def post_launch(web, token: str, request_id: str, **params) -> str:
    body = json.dumps({"template": "sleep-echo", "cluster": "local", "params": {"seconds": 60, **params}}).encode()
    request = urllib.request.Request(  # noqa: S310 (loopback)
        f"{web.url}/api/v1/jobs/",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Token {token}", "X-Request-ID": request_id},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (loopback)
        assert response.status == 201 and response.headers["X-Request-ID"] == request_id
        return json.loads(response.read())["id"]


def get_metrics(web) -> str:
    with urllib.request.urlopen(f"{web.url}/metrics", timeout=10) as response:  # noqa: S310 (loopback)
        return response.read().decode()


def test_a_burst_through_two_web_processes_and_two_workers_is_submitted_exactly_once(
    web_pair, worker_pair, alice, cluster, sleep_template, course
):
    course.max_concurrent_jobs = course.max_gpus = BURST
    course.save()
    token = Token.objects.create(user=alice).key
    request_ids = [f"burst-{i:02d}-{uuid.uuid4().hex[:8]}" for i in range(BURST)]
    launched: dict[str, str] = {}
    barrier = threading.Barrier(BURST)

    def one(i: int) -> None:
        barrier.wait()
        launched[post_launch(web_pair[i % 2], token, request_ids[i])] = request_ids[i]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(BURST)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(launched) == BURST
    # A broker that delivers twice: every submit goes out again, to whichever worker takes it first.
    redelivery = f"redelivery-{uuid.uuid4().hex[:8]}"
    token_var = logs.request_id_var.set(redelivery)
    try:
        for job_id in launched:
            submit_job.delay(job_id)
    finally:
        logs.request_id_var.reset(token_var)

    def all_on_scheduler():
        return Job.objects.filter(pk__in=launched, state__in=ON_SCHEDULER_STATES).count() == BURST

    wait_for(all_on_scheduler, timeout=120, what="every job of the burst to reach SLURM")
    comments = slurm("squeue", "--states=all", "--noheader", "--format=%k").split()
    for job_id in launched:
        assert comments.count(f"gpulab:{job_id}") == 1, job_id
    for job in Job.objects.filter(pk__in=launched):
        assert list(job.events.filter(kind="state").values_list("to_state", flat=True))[:2] == ["submitting", "pending"]
        assert job.submit_attempts == 1

    # Both workers took part, and the replica's JSON lines carry the launching request's id next to the job's.
    lines = [json.loads(line) for line in worker_pair[1].logs().splitlines() if line.startswith("{")]
    submitted = [line for line in lines if line.get("job_id") in launched]
    assert submitted, "the second worker submitted none of the burst"
    for line in submitted:
        assert line["request_id"] in (launched[line["job_id"]], redelivery)
    assert any(line["request_id"] == launched[line["job_id"]] for line in submitted)
    assert "submit_job" in worker_pair[0].logs()

    # Either web process reports the whole portal: the submits the workers timed, the burst by state.
    for web in web_pair:
        text = get_metrics(web)
        count = next(
            line
            for line in text.splitlines()
            if line.startswith('gpulab_submit_latency_seconds_count{cluster="local"}')
        )
        assert float(count.split()[-1]) >= BURST
        on_scheduler = sum(
            float(line.split()[-1])
            for line in text.splitlines()
            if line.startswith("gpulab_jobs{")
            and 'cluster="local"' in line
            and ('"pending"' in line or '"running"' in line)
        )
        assert on_scheduler == BURST


def test_websocket_clients_on_either_web_process_receive_every_frame(
    web_pair, worker, collector, api_for, alice, instructor, cluster, sleep_template, job_state
):
    from .test_telemetry import running_gpu_job

    job = running_gpu_job(api_for, alice, job_state)
    sockets = [
        Socket(web, user, path)
        for web in web_pair
        for user, path in ((alice, f"/ws/jobs/{job.pk}/"), (instructor, f"/ws/courses/{job.course.slug}/"))
    ]
    try:
        # While they are open, /metrics on either process counts the sockets of both.
        def counted():
            text = get_metrics(web_pair[1])
            lines = text.splitlines()
            return next(float(line.split()[-1]) for line in lines if line.startswith("gpulab_websocket_clients "))

        assert wait_for(lambda: counted() >= 4, timeout=10, what="/metrics to count the four sockets")
        for socket in sockets:
            socket.wait(lambda m: m.get("type") == "frame", what="a first live frame")
        first_job_seq = max(socket.frames("job")[0]["seq"] for socket in sockets[0::2])
        for socket in sockets[0::2]:
            socket.wait(lambda m: m.get("kind") == "job" and m["seq"] >= first_job_seq + 20, what="20 more job frames")
        first_course_seq = max(socket.frames("course")[0]["seq"] for socket in sockets[1::2])
        for socket in sockets[1::2]:
            socket.wait(lambda m: m.get("kind") == "course" and m["seq"] >= first_course_seq + 10, what="course frames")
    finally:
        for socket in sockets:
            socket.__exit__()
    for kind, group in (("job", sockets[0::2]), ("course", sockets[1::2])):
        start = max(socket.frames(kind)[0]["seq"] for socket in group)
        end = min(socket.frames(kind)[-1]["seq"] for socket in group)
        assert end - start >= 9
        for socket in group:
            seqs = [m["seq"] for m in socket.frames(kind) if start <= m["seq"] <= end]
            assert seqs == list(range(start, end + 1)), (kind, socket.ws.remote_address, seqs)
        texts = [[json.dumps(m, sort_keys=True) for m in s.frames(kind) if start <= m["seq"] <= end] for s in group]
        assert texts[0] == texts[1]  # the same frames, not just the same numbers


def api_get(web, token: str, path: str) -> dict:
    request = urllib.request.Request(f"{web.url}{path}", headers={"Authorization": f"Token {token}"})  # noqa: S310
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (loopback)
        return json.loads(response.read())


def test_a_job_launched_through_one_web_process_is_followed_live_through_the_other(
    web_pair, worker_pair, collector, alice, cluster, sleep_template, job_state
):
    """Two web processes and two workers on one database and broker, as a portal past one process runs: the launch
    goes to web-a, the student's page (its socket and its API) to web-b, and web-b streams the job's own GPUs."""
    token = Token.objects.create(user=alice).key
    job_id = post_launch(web_pair[0], token, f"launch-{uuid.uuid4().hex[:8]}", gpus_per_node=2, seconds=120)
    job = job_state(Job.objects.get(pk=job_id), "running", timeout=SHARED_GPUS_WAIT)
    assert api_get(web_pair[1], token, f"/api/v1/jobs/{job_id}/")["state"] == "running"
    with Socket(web_pair[1], alice, f"/ws/jobs/{job_id}/") as socket:
        assert socket.wait(lambda m: True, what="the history")["type"] == "series"
        frame = socket.wait(
            lambda m: m.get("kind") == "job" and any(g["util"] is not None for g in m.get("gpus", [])),
            what="a frame with the job's GPUs",
        )
    assert len(frame["gpus"]) == 2 and job.scheduler_id  # the two GPUs SLURM gave it, on the other process
