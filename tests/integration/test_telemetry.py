"""Live telemetry on the real stack: the collector streams nvidia-smi and iostat over SSH from the local SLURM
node (its test users have a fixture nvidia-smi that replays recorded rows), publishes through Redis, and real
WebSocket clients on the ASGI server receive what they may see, and nothing else."""

from __future__ import annotations

import itertools
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus

from courses.models import Enrollment, Role
from jobs.models import Job
from telemetry.models import JobSummary, Node
from telemetry.parsers import parse_nvidia_smi_line
from tests.kind_settings import set_cluster

from .conftest import ROOT, SHARED_GPUS_WAIT, Daemon, free_port, start_web, wait_for
from .gpu_replays import IDLE, STARVING, gpus_of, gres_indexes, replay
from .jobs_api import launch
from .ws import Socket, course_rows

ROWS = Path(__file__).resolve().parents[2] / "scripts/fixtures/nvidia-smi-query.csv"
FIXTURE = [s for s in map(parse_nvidia_smi_line, ROWS.read_text().splitlines()) if s]


def running_gpu_job(api_for, user, job_state, *, gpus: int = 2, seconds: int = 120) -> Job:
    job = launch(api_for, user, gpus_per_node=gpus, seconds=seconds, time_minutes=5)
    return job_state(job, "running", timeout=SHARED_GPUS_WAIT if gpus > 1 else 90)


def with_gpus(message: dict) -> bool:
    return (
        message.get("type") == "frame"
        and message.get("kind") == "job"
        and any(g["util"] is not None for g in message["gpus"])
    )


def test_job_socket_streams_its_gpus_from_the_node(
    worker, collector, web, api_for, alice, cluster, sleep_template, job_state
):
    job = running_gpu_job(api_for, alice, job_state)
    allocated = subprocess.run(
        ["scontrol", "show", "job", "-d", job.scheduler_id], capture_output=True, text=True, check=True
    ).stdout
    with Socket(web, alice, f"/ws/jobs/{job.pk}/") as socket:
        assert socket.wait(lambda m: True, what="the history")["type"] == "series"
        frame = socket.wait(with_gpus, what="a frame with GPU numbers")
        # The GPUs SLURM gave the job (GRES IDX), with the values the node's nvidia-smi printed for them.
        assert [g["i"] for g in frame["gpus"]] == gres_indexes(allocated.split("IDX:")[1].split(")")[0])
        for gpu in frame["gpus"]:
            recorded = {(s.util, s.mem_used_mib, s.power_w) for s in FIXTURE if s.index == gpu["i"]}
            assert (gpu["util"], gpu["mem_used"], gpu["power"]) in recorded
            assert gpu["mem_total"] == 81559 and gpu["node"] == Node.objects.get(cluster=cluster).name
        host = frame["hosts"][0]
        assert host["mem"]["total"] > 0 and host["cpu"] is not None and host["disks"], host
        # Later frames keep coming, numbered without gaps.
        socket.wait(lambda m: m.get("kind") == "job" and m["seq"] >= frame["seq"] + 3, what="three more frames")
        seqs = [m["seq"] for m in socket.frames("job")]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))

    # A page opened later starts with the history: columnar, per chart, the newest frame beside it.
    with Socket(web, alice, f"/ws/jobs/{job.pk}/") as socket:
        history = socket.wait(lambda m: m["type"] == "series")
        util = history["charts"]["gpu-util"]
        assert [t["key"] for t in util] == [g["key"] for g in frame["gpus"]]
        assert all(len(t["x"]) >= 4 and len(t["x"]) == len(t["y"]) for t in util)
        assert history["last"]["kind"] == "job" and history["last"]["seq"] > frame["seq"]
        assert history["recorded"] is False


def test_sockets_only_join_what_the_user_may_see(
    worker, collector, web, api_for, alice, bob, instructor, carol, other_course, make_user, course, cluster,
    sleep_template, job_state,
):  # fmt: skip
    job = running_gpu_job(api_for, alice, job_state, gpus=1)
    other_instructor = make_user("olga")
    Enrollment.objects.create(user=other_instructor, course=other_course, role=Role.INSTRUCTOR)
    refused = [
        (bob, f"/ws/jobs/{job.pk}/"),  # another student's job
        (bob, f"/ws/courses/{course.slug}/"),  # a student asks for the class
        (carol, f"/ws/jobs/{job.pk}/"),  # a student of another course
        (other_instructor, f"/ws/courses/{course.slug}/"),  # an instructor of another course
        (other_instructor, f"/ws/jobs/{job.pk}/"),
        (instructor, f"/ws/nodes/{Node.objects.get(cluster=cluster).pk}/"),  # nodes are for admins
    ]
    for user, path in refused:
        with pytest.raises(InvalidStatus) as refusal:
            Socket(web, user, path)
        assert refusal.value.response.status_code == 403, (user, path)

    with Socket(web, instructor, f"/ws/courses/{course.slug}/") as socket:
        rows = course_rows(socket)
        assert {g["student"] for g in rows} == {"alice"} and rows[0]["job"] == str(job.pk)
    with Socket(web, instructor, f"/ws/jobs/{job.pk}/") as socket:
        socket.wait(with_gpus, what="the job's frames, for its instructor")


@pytest.mark.slurm_exclusive  # it freezes the service account's processes on the node
def test_node_page_socket_and_a_node_that_stops_answering_turns_stale(
    worker, collector, web, api_for, alice, admin_user, cluster, sleep_template, job_state
):
    job = running_gpu_job(api_for, alice, job_state, gpus=1)
    node = wait_for(lambda: Node.objects.filter(cluster=cluster).first(), what="the node to be found")
    with Socket(web, admin_user, f"/ws/nodes/{node.pk}/") as socket:
        frame = socket.wait(lambda m: m.get("kind") == "node" and m["gpus"] and not m["stale"], what="a node frame")
        assert len(frame["gpus"]) == 4 and frame["has_gpu"] is True
    # Freeze nvidia-smi and the host sampler on the node: no new rows, the connection itself stays up.
    frozen = ["pkill", "-STOP", "-u", "labsvc", "-f", "nvidia-smi|iostat|sleep"]
    subprocess.run(frozen, check=False)
    try:
        with Socket(web, alice, f"/ws/jobs/{job.pk}/") as socket:
            stale = socket.wait(
                lambda m: m.get("kind") == "job" and m["gpus"] and m["gpus"][0]["stale"], timeout=15, what="stale"
            )
            assert stale["gpus"][0]["util"] is None and stale["gpus"][0]["power"] is None  # a gap, never 0 %
    finally:
        subprocess.run(["pkill", "-CONT", "-u", "labsvc"], check=False)
    with Socket(web, alice, f"/ws/jobs/{job.pk}/") as socket:
        socket.wait(with_gpus, timeout=20, what="fresh numbers after the node answers again")


@pytest.mark.slurm_outage  # it kills the service account's SSH connections
def test_dropped_ssh_connection_reconnects_within_five_seconds(
    worker, collector, web, api_for, alice, cluster, sleep_template, job_state
):
    job = running_gpu_job(api_for, alice, job_state, gpus=1)
    with Socket(web, alice, f"/ws/jobs/{job.pk}/") as socket:
        socket.wait(with_gpus, what="the first numbers")
        # Kill the sshd processes serving the collector's node stream (the login node's other sessions reconnect).
        subprocess.run(["pkill", "-KILL", "-u", "labsvc", "-f", "nvidia-smi"], check=False)
        subprocess.run(["pkill", "-KILL", "-u", "labsvc", "-x", "sshd"], check=False)
        dropped = time.monotonic()
        socket.messages.clear()
        socket.wait(
            lambda m: with_gpus(m) and time.monotonic() - dropped > 0.5, timeout=10, what="numbers after the drop"
        )
        assert time.monotonic() - dropped < 6
    assert "reconnecting" in collector.logs() or "Lost" in collector.logs() or "no data" in collector.logs()


class TelemetryRedis:
    """A Redis of this test's own for the telemetry (TELEMETRY_REDIS_URL: the channel layer and the rings), so that
    restarting it, as an outage would, stops no other test's broker, cache or sockets."""

    def __init__(self, folder: Path):
        self.port, self.folder, self.proc = free_port(), folder, None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen([*argv, "--dir", str(self.folder)], stdout=subprocess.DEVNULL)
        wait_for(self._answers, timeout=10, what="the test's Redis")

    def _answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url).ping())
        except redis.ConnectionError:
            return False

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def test_streams_resume_after_redis_restarts(
    worker, portal_env, api_for, alice, cluster, sleep_template, job_state, tmp_path
):
    telemetry_redis = TelemetryRedis(tmp_path)
    telemetry_redis.start()
    env = {**portal_env, "TELEMETRY_REDIS_URL": telemetry_redis.url}
    argv = [str(ROOT / ".venv/bin/python"), str(ROOT / "manage.py"), "collect_telemetry"]
    collector = Daemon(argv, env, tmp_path / "collector.log", lambda text: "telemetry: following" in text).start()
    web = start_web(env, tmp_path / "web.log")
    try:
        job = running_gpu_job(api_for, alice, job_state, gpus=1)
        with Socket(web, alice, f"/ws/jobs/{job.pk}/") as socket:
            before = socket.wait(with_gpus, what="the first numbers")
            telemetry_redis.stop()  # an outage: its data (the counters, the rings) is gone with it
            telemetry_redis.start()
            back = time.monotonic()
            after = socket.wait(lambda m: with_gpus(m) and m["t"] > before["t"] + 1000, timeout=15, what="frames")
            assert time.monotonic() - back < 5, "frames resumed too late"
            # Redis lost the counter; the new one starts above the old, or browsers would drop the frames as seen.
            assert after["seq"] > before["seq"]
    finally:
        web.stop()
        collector.stop()
        telemetry_redis.stop()


def test_trainer_lines_become_curves_and_the_log_streams(
    worker, collector, web, api_for, alice, instructor, course, cluster, sleep_template, job_state, login
):
    from jobs.models import JobTemplate

    trainer = JobTemplate.objects.create(
        name="Trainer lines",
        slug="trainer-lines",
        body=(
            "for i in 1 2 3 4 5 6 7 8; do\n"
            '  echo "epoch=0 step=$((i * 10)) loss=$((9 - i)).25 tok/s=$((1000 + i)).5 step_ms=12.0"\n'
            "  sleep 1\n"
            "done\n"
            "sleep 60\n"
        ),
        parameters=[{"name": "gpus_per_node", "type": "int", "label": "GPUs", "default": 1, "min": 0, "max": 2}],
        status=JobTemplate.Status.PUBLISHED,
    )
    trainer.courses.add(course)
    response = api_for(alice).post(
        "/api/v1/jobs/", {"template": "trainer-lines", "cluster": "local", "params": {}}, format="json"
    )
    job = job_state(Job.objects.get(pk=response.json()["id"]), "running")
    with Socket(web, alice, f"/ws/jobs/{job.pk}/") as socket:
        socket.wait(
            lambda m: _has_step(socket, 80) and any("step=80" in x.get("data", "") for x in socket.messages),
            timeout=40,
            what="step 80 on the trainer curve and in the log",
        )
        assert _has_step(socket, 10) and _has_step(socket, 80)
        # The log arrives in pieces that follow each other byte for byte.
        logs = [m for m in socket.messages if m["type"] == "log"]
        assert logs and all(a["next"] == b["offset"] for a, b in itertools.pairwise(logs))
        assert "epoch=0 step=80 loss=1.25 tok/s=1008.5" in "".join(m["data"] for m in logs)
    # A page opened now gets the whole curve at once.
    with Socket(web, alice, f"/ws/jobs/{job.pk}/") as socket:
        curve = socket.wait(lambda m: m["type"] == "series")["charts"]
        assert curve["loss"][0]["x"] == [10, 20, 30, 40, 50, 60, 70, 80]
        assert (curve["loss"][0]["y"][0], curve["tokens"][0]["y"][0]) == (8.25, 1001.5)

    # When it ends, its summary is stored and the instructor's CSV has it.
    api_for(alice).post(f"/api/v1/jobs/{job.pk}/cancel/")
    job_state(job, "cancelled")
    summary = wait_for(lambda: JobSummary.objects.filter(job=job).first(), timeout=30, what="the summary")
    assert summary.gpu_hours > 0 and summary.mean_tokens_per_s == pytest.approx(1005.0)
    assert summary.mean_gpu_util is not None and summary.samples > 0
    assert summary.gpu_memory_total_mib == max(
        sample.mem_total_mib for sample in FIXTURE
    )  # what the peak is a share of
    csv = login(instructor).get(f"/courses/{course.slug}/report.csv")
    assert csv.status_code == 200 and csv["Content-Type"].startswith("text/csv")
    assert f"alice,{job.pk},Trainer lines" in csv.content.decode()


def _has_step(socket, step: int) -> bool:
    steps = [p["step"] for m in socket.messages if m.get("kind") == "job" for p in m["trainer"]]
    steps += [x for m in socket.messages if m["type"] == "series" for t in m["charts"].get("loss", []) for x in t["x"]]
    return step in steps


@pytest.mark.slurm_gpu_replays
@pytest.mark.timeout(180 + SHARED_GPUS_WAIT)  # its two GPUs may wait for the other lanes' jobs
def test_bottleneck_hints_show_once_they_hold_and_idle_gpus_flag_the_student(
    worker, collector, web, api_for, alice, instructor, course, cluster, sleep_template, job_state
):
    # Two GPUs, shown as the recorded GPU 2 (88% of its memory at 12-28% utilization) and GPU 3 (doing nothing).
    job = running_gpu_job(api_for, alice, job_state, gpus=2, seconds=300)
    starving, idle_gpu = gpus_of(job.scheduler_id)
    replay({starving: STARVING, idle_gpu: IDLE})
    try:
        _hints_and_the_class_view(web, alice, instructor, course, job, starving, idle_gpu)
    finally:
        replay({})


def _hints_and_the_class_view(web, alice, instructor, course, job, starving: int, idle_gpu: int) -> None:
    with Socket(web, alice, f"/ws/jobs/{job.pk}/") as socket:
        first = socket.wait(with_gpus, what="GPU numbers")
        assert first["hints"] == []  # nothing before the rules have held for 30 s
        hinted = socket.wait(
            lambda m: m.get("kind") == "job" and {"input_starvation", "gpu_idle"} <= {h["code"] for h in m["hints"]},
            timeout=60,
            what="the starvation and idle hints",
        )
        assert hinted["t"] - first["t"] >= 20_000
        codes = {h["code"] for h in hinted["hints"]}
        assert "sync_stalls" not in codes and "io_bound" not in codes
        starvation = next(h for h in hinted["hints"] if h["code"] == "input_starvation")
        assert "num_workers" in starvation["advice"] and "pin_memory" in starvation["advice"]
    with Socket(web, instructor, f"/ws/courses/{course.slug}/") as socket:
        idle = {g["key"].rsplit("/", 1)[-1]: g["idle_s"] for g in course_rows(socket)}
        assert idle[str(idle_gpu)] >= 20 and idle[str(starving)] == 0


def test_kubernetes_pod_usage_and_dcgm_gpus_reach_the_job_frame(alice, course, k8s_cluster, k8s_templates, kube):
    """The Kubernetes source against the emulated API server (metrics.k8s.io) and a Prometheus answer on loopback."""
    import http.server
    import threading

    from jobs.launch import launch as launch_job
    from telemetry.collector.kubernetes_source import MetricsApiSource
    from telemetry.frames import FrameBuilder
    from telemetry.live import LiveState

    job = launch_job(alice, course=course, template=k8s_templates["k8s-tinylm-server"], cluster=k8s_cluster,
                     raw_params={"gpus": 1})  # fmt: skip
    namespace = "gpulab-telemetry"
    Job.objects.filter(pk=job.pk).update(state="running", scheduler_id=f"{namespace}/{job.pk}")
    pod = "tinylm-server-7d9c5b6f4-x2x8q"
    kube.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    kube.call(
        "POST",
        f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods",
        {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "PodMetrics",
            "metadata": {
                "name": pod,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "gpulab-portal", "gpulab.io/job": str(job.pk)},
            },
            "containers": [{"name": "server", "usage": {"cpu": "1500m", "memory": "3Gi"}}],
        },
    )
    answer = (Path(__file__).parents[1] / "fixtures/telemetry/dcgm-query.json").read_text()
    answer = answer.replace('"gpulab-hpc"', f'"{namespace}"').encode()
    queries = []

    class Prometheus(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            queries.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Prometheus)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        set_cluster(k8s_cluster, prometheus_url=f"http://127.0.0.1:{server.server_address[1]}").save()
        state = LiveState()
        MetricsApiSource(state, k8s_cluster, threading.Event()).cycle()
    finally:
        server.shutdown()
    assert len(queries) == 1 and "DCGM_FI_DEV_GPU_UTIL" in urllib.parse.unquote(queries[0])
    frame = FrameBuilder().build(state.take(), now=time.time())[f"telemetry.job.{job.pk}"]
    assert frame["pod"] == {"cpu_millis": 1500.0, "mem_bytes": 3 * 2**30}
    (gpu,) = frame["gpus"]  # only the GPU whose pod is this job's; the idle GPU of nobody is not shown
    assert (gpu["node"], gpu["util"], gpu["mem_used"], gpu["mem_total"], gpu["power"]) == (
        "gpu-node-1",
        87.0,
        30512.0,
        81047.0,
        412.337,
    )
