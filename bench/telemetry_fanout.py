"""Telemetry fan-out: 240 GPU series at 1 Hz, 200 real WebSocket clients on the ASGI server, for 5 minutes.

    .venv/bin/python bench/telemetry_fanout.py [--seconds 300] [--layer pubsub|classic]

Three processes, so each one's CPU is its own:
- the producer: the collector's own LiveState, FrameBuilder and publisher (Collector.publish_once), fed by 30
  synthetic nodes of 8 GPUs whose nvidia-smi blocks arrive once a second at staggered phases, as real streams do;
- the server: uvicorn with portal.asgi (one process), the consumers checking access in PostgreSQL;
- the clients: 200 websockets (150 on 60 job pages, 40 on the class dashboard, 10 on node pages).
Latency is sample→client: the client's receive time minus the frame's "st" (when the collector got the sample).
Delivery counts frames against each socket's sequence numbers. Targets: p95 ≤ 250 ms, p99 ≤ 500 ms,
≥ 99.9 % delivered, server ≤ 1 core, ≤ 100 KiB per socket.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, percentile, setup_database, start, stop, wait_for

NODES, GPUS_PER_NODE, GPUS_PER_JOB = 30, 8, 4
JOB_SOCKETS, COURSE_SOCKETS, NODE_SOCKETS = 150, 40, 10
WARMUP = 10.0
FIRST_WAVE = 20  # sockets opened first; memory per socket is measured from there to all of them


# -- producer -------------------------------------------------------------------------------------------------------
def produce(seconds: float, plan: dict) -> None:
    import django

    django.setup()
    from telemetry.collector.run import Collector
    from telemetry.live import JobRef
    from telemetry.parsers import GpuSample
    from telemetry.stream import Publisher

    collector = Collector(cluster_names=["bench-none"])
    state = collector.state
    for node in plan["nodes"]:
        state.node(node["id"], 0, node["name"])
    state.put_allocations(
        0,
        [
            (JobRef(job["id"], job["owner"], plan["course_id"], GPUS_PER_JOB), job["node_id"], tuple(job["indexes"]))
            for job in plan["jobs"]
        ],
    )
    rng = random.Random(7)

    def block(index: int) -> list:
        return [
            GpuSample(
                i,
                f"GPU-{index:04d}-{i}",
                rng.uniform(0, 100),
                rng.uniform(0, 60),
                rng.uniform(1e3, 8e4),
                81559.0,
                rng.uniform(80, 700),
                rng.uniform(30, 80),
                1980.0,
            )
            for i in range(GPUS_PER_NODE)
        ]

    async def run() -> None:
        publisher = Publisher()
        started = time.monotonic()
        phase = {node["id"]: i / NODES for i, node in enumerate(plan["nodes"])}
        next_due = {node_id: started + offset for node_id, offset in phase.items()}
        ticks, published = 0, 0
        while time.monotonic() - started < seconds:
            now = time.monotonic()
            for node_id, due in next_due.items():
                if now >= due:  # this node's nvidia-smi block has just arrived
                    state.put_gpus(node_id, block(node_id))
                    next_due[node_id] = due + 1.0
            tick_started = time.monotonic()
            before = publisher.published
            await collector.publish_once(publisher)
            published += publisher.published - before
            ticks += 1
            await asyncio.sleep(max(0.0, collector.tick - (time.monotonic() - tick_started)))
        print(json.dumps({"ticks": ticks, "frames_published": published}), flush=True)
        await publisher.close()

    asyncio.run(run())


# -- clients --------------------------------------------------------------------------------------------------------
def clients(seconds: float, plan: dict, url: str) -> None:
    from websockets.asyncio.client import connect

    latencies: list[float] = []
    sockets: list[dict] = []

    async def follow(path: str, cookie: str, stop_at: float) -> None:
        record = {"path": path, "seqs": []}
        sockets.append(record)
        headers = {"Cookie": f"sessionid={cookie}", "Origin": url}
        async with connect(url.replace("http", "ws") + path, additional_headers=headers, max_size=2**24) as ws:
            while time.time() < stop_at:
                try:
                    raw = await asyncio.wait_for(ws.recv(), timeout=max(0.1, stop_at - time.time()))
                except TimeoutError:
                    break
                received = time.time() * 1000
                message = json.loads(raw)
                if message.get("type") != "frame":
                    continue
                if received / 1000 > measure_from:
                    record["seqs"].append(message["seq"])
                    if message.get("st"):
                        latencies.append(received - message["st"])

    paths = []
    for i in range(JOB_SOCKETS):
        job = plan["jobs"][i % len(plan["jobs"])]
        paths.append((f"/ws/jobs/{job['id']}/", job["cookie"]))
    paths += [(f"/ws/courses/{plan['course_slug']}/", plan["instructor_cookie"])] * COURSE_SOCKETS
    paths += [(f"/ws/nodes/{plan['nodes'][i]['id']}/", plan["admin_cookie"]) for i in range(NODE_SOCKETS)]
    measure_from = time.time() + WARMUP
    stop_at = time.time() + seconds

    random.Random(3).shuffle(paths)

    async def run() -> None:
        first = [asyncio.create_task(follow(p, c, stop_at)) for p, c in paths[:FIRST_WAVE]]
        await asyncio.sleep(3)
        print("first wave connected", flush=True)
        await asyncio.sleep(3)
        rest = [asyncio.create_task(follow(p, c, stop_at)) for p, c in paths[FIRST_WAVE:]]
        await asyncio.sleep(3)
        print("all connected", flush=True)
        await asyncio.gather(*first, *rest)

    asyncio.run(run())
    received = sum(len(s["seqs"]) for s in sockets)
    expected = sum(max(s["seqs"]) - min(s["seqs"]) + 1 for s in sockets if s["seqs"])
    print(
        json.dumps(
            {
                "sockets": len(sockets),
                "sockets_with_frames": sum(1 for s in sockets if s["seqs"]),
                "frames_received": received,
                "frames_expected": expected,
                "latency_ms": {p: percentile(latencies, p) for p in (50, 95, 99)},
                "latency_max_ms": max(latencies, default=0.0),
            }
        ),
        flush=True,
    )


# -- orchestration --------------------------------------------------------------------------------------------------
def build_plan() -> dict:
    from common import make_lab
    from django.contrib.auth import get_user_model
    from django.test import Client

    from courses.models import Course, Enrollment, Role
    from jobs.models import Job, JobTemplate
    from telemetry.models import Node

    course, _student, cluster, template = make_lab()
    users = get_user_model().objects
    instructor = users.create_user("bench-instructor", password="bench-password-123")
    Enrollment.objects.create(course=course, user=instructor, role=Role.INSTRUCTOR)
    admin = users.create_superuser("bench-admin", password="bench-password-123")
    nodes = [Node.objects.create(cluster=cluster, name=f"gpu{n:02d}", gpus=GPUS_PER_NODE) for n in range(NODES)]

    def cookie(user) -> str:
        client = Client()
        client.force_login(user)
        return client.cookies["sessionid"].value

    jobs = []
    per_node = GPUS_PER_NODE // GPUS_PER_JOB
    for n, node in enumerate(nodes):
        for k in range(per_node):
            owner = users.create_user(f"student{n * per_node + k:03d}", password="bench-password-123")
            Enrollment.objects.create(course=course, user=owner)
            job = Job.objects.create(
                owner=owner,
                course=course,
                template=template,
                cluster=cluster,
                state="running",
                gpus=GPUS_PER_JOB,
                scheduler_id=str(1000 + len(jobs)),
            )
            indexes = list(range(k * GPUS_PER_JOB, (k + 1) * GPUS_PER_JOB))
            jobs.append(
                {
                    "id": str(job.pk),
                    "owner": owner.username,
                    "node_id": node.pk,
                    "indexes": indexes,
                    "cookie": cookie(owner),
                }
            )
    assert isinstance(template, JobTemplate) and isinstance(course, Course)
    return {
        "course_id": course.pk,
        "course_slug": course.slug,
        "nodes": [{"id": n.pk, "name": n.name} for n in nodes],
        "jobs": jobs,
        "instructor_cookie": cookie(instructor),
        "admin_cookie": cookie(admin),
    }


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--layer", choices=["pubsub", "classic"], default="pubsub")
    parser.add_argument("--ws", default="websockets-sansio", help="uvicorn's WebSocket implementation")
    parser.add_argument("--role", choices=["main", "producer", "clients"], default="main")
    parser.add_argument("--plan")
    parser.add_argument("--url")
    args = parser.parse_args()
    if args.role == "producer":
        return produce(args.seconds, json.loads(Path(args.plan).read_text()))
    if args.role == "clients":
        return clients(args.seconds, json.loads(Path(args.plan).read_text()), args.url)

    layer = {
        "pubsub": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "classic": "channels_redis.core.RedisChannelLayer",
    }[args.layer]
    os.environ["CHANNEL_LAYER_BACKEND"] = layer
    teardown = setup_database()
    results = ROOT / "bench/results"
    results.mkdir(parents=True, exist_ok=True)
    procs = []
    try:
        import redis
        from django.conf import settings

        client = redis.Redis.from_url(settings.TELEMETRY_REDIS_URL)
        for key in client.scan_iter("gpulab:*"):
            client.delete(key)
        plan = build_plan()
        plan_path = results / "telemetry_plan.json"
        plan_path.write_text(json.dumps(plan))
        port = 8791
        url = f"http://127.0.0.1:{port}"
        server = start(
            [str(ROOT / ".venv/bin/uvicorn"), "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port),
             "--log-level", "warning", "--ws", args.ws],
            results / "telemetry_server.log",
        )  # fmt: skip
        procs.append(server)
        wait_for(lambda: _answers(url), 30, "the ASGI server")
        me = [sys.executable, __file__, "--plan", str(plan_path), "--seconds"]
        total = args.seconds + WARMUP + 5
        producer = start([*me, str(total), "--role", "producer"], results / "telemetry_producer.log")
        procs.append(producer)
        clients_proc = start(
            [*me, str(args.seconds + WARMUP), "--role", "clients", "--url", url], results / "telemetry_clients.log"
        )
        procs.append(clients_proc)
        clients_log = results / "telemetry_clients.log"
        wait_for(lambda: "first wave connected" in clients_log.read_text(), 30, "the first sockets")
        time.sleep(1)
        rss_first = rss_kib(server.pid)
        wait_for(lambda: "all connected" in clients_log.read_text(), 30, "every socket")
        time.sleep(1)
        rss_all = rss_kib(server.pid)
        time.sleep(max(0.0, WARMUP - 8))
        cpu0, wall0 = cpu_seconds(server.pid), time.monotonic()
        producer_cpu0 = cpu_seconds(producer.pid)
        rss_peak = 0
        while clients_proc.poll() is None:
            rss_peak = max(rss_peak, rss_kib(server.pid))
            time.sleep(2)
        wall = time.monotonic() - wall0
        server_cores = (cpu_seconds(server.pid) - cpu0) / wall
        producer_cores = (cpu_seconds(producer.pid) - producer_cpu0) / wall if producer.poll() is None else float("nan")
        report = json.loads((results / "telemetry_clients.log").read_text().strip().splitlines()[-1])
        delivered = report["frames_received"] / max(1, report["frames_expected"])
        lat = report["latency_ms"]
        print(f"server: uvicorn --ws {args.ws}")
        print(f"layer: {args.layer} ({layer}); {args.seconds:.0f} s measured after {WARMUP:.0f} s warm-up")
        print(f"series: {NODES * GPUS_PER_NODE} GPUs at 1 Hz on {NODES} nodes; {len(plan['jobs'])} jobs")
        print(f"sockets: {report['sockets']} ({report['sockets_with_frames']} received frames)")
        print(f"latency sample→client: p50 {lat['50']:.0f} ms, p95 {lat['95']:.0f} ms, p99 {lat['99']:.0f} ms, "
              f"max {report['latency_max_ms']:.0f} ms")  # fmt: skip
        print(f"delivered: {report['frames_received']}/{report['frames_expected']} frames = {100 * delivered:.3f} %")
        print(
            f"server CPU: {server_cores:.2f} cores; producer (collector publish path) CPU: {producer_cores:.2f} cores"
        )
        # Per socket: the growth from the first wave of sockets to all of them, so start-up imports do not count.
        per_socket = (rss_all - rss_first) / (report["sockets"] - FIRST_WAVE)
        print(
            f"server memory: {rss_first / 1024:.0f} MiB with {FIRST_WAVE} sockets, {rss_all / 1024:.0f} MiB with "
            f"{report['sockets']}, peak {rss_peak / 1024:.0f} MiB; {per_socket:.0f} KiB per socket"
        )
    finally:
        for proc in procs:
            stop(proc)
        teardown()


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url + "/login/", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


if __name__ == "__main__":
    main()
