"""Telemetry fan-out: GPU series at 1 Hz to real WebSocket clients over one or more ASGI web processes.

    .venv/bin/python bench/telemetry_fanout.py [--gpus 240] [--sockets 200] [--web-processes 1]
        [--client-processes 1] [--seconds 300] [--layer pubsub|classic]

Separate processes, so each one's CPU is its own:
- the producer: the collector's own LiveState, FrameBuilder and publisher (Collector.publish_once), fed by
  --gpus / 8 synthetic nodes of 8 GPUs whose nvidia-smi blocks arrive once a second at staggered phases, as real
  streams do; one job of 4 GPUs per half node;
- the servers: --web-processes uvicorn processes with portal.asgi, sharing the Redis channel layer, the consumers
  checking access in PostgreSQL;
- the clients: --sockets websockets spread over the servers in turn (75 % on job pages, 20 % on the class
  dashboard, 5 % on node pages), in --client-processes processes.
Latency is sample→client: the client's receive time minus the frame's "st" (when the collector got the sample).
Delivery counts frames against each socket's sequence numbers. Targets: p95 ≤ 250 ms, p99 ≤ 500 ms,
≥ 99.9 % delivered, ≤ 1 core per server, ≤ 100 KiB per socket; past one process: 1,000 GPUs and 1,000 sockets over
two or more.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, percentile, setup_database, start, stop, wait_for

GPUS_PER_NODE, GPUS_PER_JOB = 8, 4
WARMUP = 10.0
FIRST_WAVE = 20  # sockets opened first (over all client processes); memory per socket is measured from there on


FRAME_HEAD = re.compile(r'\{"type":"frame","seq":(\d+),')
SAMPLED_AT = re.compile(r'"st":(\d+)')


def socket_mix(sockets: int, nodes: int, course_sockets: int | None) -> tuple[int, int, int]:
    """(job, course, node) sockets: by default 75 %, 20 % and 5 % of them, as 150, 40 and 10 of 200."""
    node_sockets = min(nodes, max(1, sockets // 20))
    course_sockets = sockets // 5 if course_sockets is None else course_sockets
    return sockets - course_sockets - node_sockets, course_sockets, node_sockets


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
        phase = {node["id"]: i / len(plan["nodes"]) for i, node in enumerate(plan["nodes"])}
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
def clients(seconds: float, plan: dict, urls: list[str], args: argparse.Namespace, out: Path) -> None:
    """This process's share (every `parts`-th socket from `part`) of the sockets, each on the servers in turn."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake

    latencies: dict[str, list[float]] = {"job": [], "course": [], "node": []}
    arrivals: list[tuple[float, float]] = []  # (seconds into the measurement, latency ms): how it moves over time
    sockets: list[dict] = []

    async def follow(url: str, path: str, cookie: str, stop_at: float) -> None:
        record: dict = {"path": path, "seqs": [], "asked": time.time(), "bytes": 0}
        sockets.append(record)
        try:
            await receive(url, path, cookie, stop_at, record)
        except (OSError, TimeoutError, InvalidHandshake, ConnectionClosed) as exc:  # counted, not fatal to the others
            record["error"] = f"{type(exc).__name__}: {exc}"

    async def receive(url: str, path: str, cookie: str, stop_at: float, record: dict) -> None:
        headers = {"Cookie": f"sessionid={cookie}", "Origin": url}
        ws_url = url.replace("http", "ws") + path
        kind = path.split("/")[2].rstrip("s")  # /ws/jobs/… → job
        async with connect(ws_url, additional_headers=headers, max_size=2**24, open_timeout=60) as ws:
            while time.time() < stop_at:
                try:
                    raw = await asyncio.wait_for(ws.recv(), timeout=max(0.1, stop_at - time.time()))
                except TimeoutError:
                    break
                received = time.time() * 1000
                record.setdefault("first", received / 1000 - record["asked"])  # opened and first message read
                # Only the frame's head is read (the server writes "type", "seq" first): a thousand sockets' JSON
                # decoded whole would make this process, not the servers, the bottleneck on a small machine.
                head = FRAME_HEAD.match(raw)
                if head is None:
                    record.setdefault("first_bytes", len(raw))
                    continue
                if received / 1000 > measure_from:
                    record["bytes"] += len(raw)
                    record["seqs"].append(int(head.group(1)))
                    sampled = SAMPLED_AT.search(raw)
                    if sampled:
                        latencies[kind].append(received - int(sampled.group(1)))
                        arrivals.append((received / 1000 - measure_from, received - int(sampled.group(1))))

    job_sockets, course_sockets, node_sockets = socket_mix(args.sockets, len(plan["nodes"]), args.course_sockets)
    part, parts = args.part, args.client_processes
    paths = []
    for i in range(job_sockets):
        job = plan["jobs"][i % len(plan["jobs"])]
        paths.append((f"/ws/jobs/{job['id']}/", job["cookie"]))
    paths += [(f"/ws/courses/{plan['course_slug']}/", plan["instructor_cookie"])] * course_sockets
    paths += [(f"/ws/nodes/{plan['nodes'][i]['id']}/", plan["admin_cookie"]) for i in range(node_sockets)]
    random.Random(3).shuffle(paths)
    mine = [(urls[i % len(urls)], *paths[i]) for i in range(part, len(paths), parts)]
    first_wave = len(range(part, FIRST_WAVE, parts))
    measure_from = time.time() + WARMUP + 0.01 * len(mine)  # after the last socket opened (main waits as long)
    stop_at = time.time() + seconds

    async def run() -> None:
        first = [asyncio.create_task(follow(u, p, c, stop_at)) for u, p, c in mine[:first_wave]]
        await asyncio.sleep(3)
        print("first wave connected", flush=True)
        await asyncio.sleep(3)
        rest = []
        for u, p, c in mine[first_wave:]:  # a hundred a second, as pages opening, not one burst
            rest.append(asyncio.create_task(follow(u, p, c, stop_at)))
            await asyncio.sleep(0.01)
        await asyncio.sleep(3)
        print("all connected", flush=True)
        await asyncio.gather(*first, *rest)

    asyncio.run(run())
    errors = [s["error"] for s in sockets if "error" in s]
    out.write_text(json.dumps({"sockets": sockets, "latencies": latencies, "arrivals": arrivals, "errors": errors}))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"client CPU seconds {usage.ru_utime + usage.ru_stime:.1f}", flush=True)


# -- orchestration --------------------------------------------------------------------------------------------------
def build_plan(gpus: int) -> dict:
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
    count = -(-gpus // GPUS_PER_NODE)
    nodes = [Node.objects.create(cluster=cluster, name=f"gpu{n:03d}", gpus=GPUS_PER_NODE) for n in range(count)]

    def cookie(user) -> str:
        client = Client()
        client.force_login(user)
        return client.cookies["sessionid"].value

    jobs = []
    per_node = GPUS_PER_NODE // GPUS_PER_JOB
    for n, node in enumerate(nodes):
        for k in range(per_node):
            owner = users.create_user(f"student{n * per_node + k:03d}")  # signed in by cookie: no password to hash
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
    parser.add_argument("--gpus", type=int, default=240, help="GPU series at 1 Hz (8 per node, 4 per job)")
    parser.add_argument("--sockets", type=int, default=200, help="WebSocket clients, over the web processes in turn")
    parser.add_argument("--web-processes", type=int, default=1, help="uvicorn processes sharing the channel layer")
    parser.add_argument("--client-processes", type=int, default=1, help="processes the sockets are spread over")
    parser.add_argument("--course-sockets", type=int, help="class dashboards among the sockets (default: 20 %%)")
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--layer", choices=["pubsub", "classic"], default="pubsub")
    parser.add_argument("--ws", default="websockets-sansio", help="uvicorn's WebSocket implementation")
    parser.add_argument("--deflate", action="store_true", help="let sockets compress each message (uvicorn's default)")
    parser.add_argument("--role", choices=["main", "producer", "clients"], default="main")
    parser.add_argument("--plan")
    parser.add_argument("--urls", help="the servers' URLs, comma-separated (role clients)")
    parser.add_argument("--part", type=int, default=0, help="which client process this is (role clients)")
    parser.add_argument("--out", help="where a client process writes what it received (role clients)")
    args = parser.parse_args()
    if args.role == "producer":
        return produce(args.seconds, json.loads(Path(args.plan).read_text()))
    if args.role == "clients":
        plan = json.loads(Path(args.plan).read_text())
        urls = args.urls.split(",")
        return clients(args.seconds, plan, urls, args, Path(args.out))

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
        plan = build_plan(args.gpus)
        plan_path = results / "telemetry_plan.json"
        plan_path.write_text(json.dumps(plan))
        urls, servers = [], []
        for n in range(args.web_processes):
            port = 8791 + n
            urls.append(f"http://127.0.0.1:{port}")
            argv = [str(ROOT / ".venv/bin/uvicorn"), "portal.asgi:application", "--host", "127.0.0.1"]
            argv += ["--port", str(port), "--log-level", "warning", "--ws", args.ws]
            argv += ["--ws-per-message-deflate", "true" if args.deflate else "false"]
            servers.append(start(argv, results / f"telemetry_server_{n}.log"))
        procs += servers
        for url in urls:
            wait_for(lambda url=url: _answers(url), 30, f"the ASGI server at {url}")
        me = [sys.executable, __file__, "--plan", str(plan_path), "--seconds"]
        total = args.seconds + WARMUP + 5 + args.sockets / 100 / args.client_processes
        producer = start([*me, str(total), "--role", "producer"], results / "telemetry_producer.log")
        procs.append(producer)
        client_logs, client_procs = [], []
        for part in range(args.client_processes):
            log = results / f"telemetry_clients_{part}.log"
            argv = [*me, str(total - 5), "--role", "clients", "--urls", ",".join(urls), "--sockets", str(args.sockets)]
            argv += ["--client-processes", str(args.client_processes), "--part", str(part)]
            argv += ["--course-sockets", str(args.course_sockets)] if args.course_sockets is not None else []
            client_procs.append(start([*argv, "--out", str(log.with_suffix(".json"))], log))
            client_logs.append(log)
        procs += client_procs

        def every_client_says(line: str) -> bool:
            return all(line in log.read_text() for log in client_logs)

        wait_for(lambda: every_client_says("first wave connected"), 60, "the first sockets")
        time.sleep(1)
        rss_first = sum(rss_kib(server.pid) for server in servers)
        wait_for(lambda: every_client_says("all connected"), 60 + args.sockets / 50, "every socket")
        time.sleep(1)
        rss_all = sum(rss_kib(server.pid) for server in servers)
        time.sleep(max(0.0, WARMUP - 8 + 0.01 * args.sockets / args.client_processes))
        cpu0, wall0 = [cpu_seconds(server.pid) for server in servers], time.monotonic()
        producer_cpu0 = cpu_seconds(producer.pid)
        rss_peak = 0
        while any(proc.poll() is None for proc in client_procs):
            rss_peak = max(rss_peak, sum(rss_kib(server.pid) for server in servers if server.poll() is None))
            time.sleep(2)
        wall = time.monotonic() - wall0
        server_cores = [(cpu_seconds(server.pid) - c0) / wall for server, c0 in zip(servers, cpu0, strict=True)]
        producer_cores = (cpu_seconds(producer.pid) - producer_cpu0) / wall if producer.poll() is None else float("nan")
        client_cores = [float(log.read_text().rsplit("client CPU seconds ", 1)[-1].split()[0]) for log in client_logs]
        sockets: list[dict] = []
        by_kind: dict[str, list[float]] = {"job": [], "course": [], "node": []}
        errors, arrivals = [], []
        for log in client_logs:
            part = json.loads(log.with_suffix(".json").read_text())
            sockets += part["sockets"]
            arrivals += part["arrivals"]
            for kind, values in part["latencies"].items():
                by_kind[kind] += values
            errors += part["errors"]
        seqs = [s["seqs"] for s in sockets]
        latencies = [value for values in by_kind.values() for value in values]
        received = sum(len(s) for s in seqs)
        expected = sum(max(s) - min(s) + 1 for s in seqs if s)
        delivered = received / max(1, expected)
        deflate = "per-message deflate" if args.deflate else "no per-message deflate"
        print(f"servers: {args.web_processes} uvicorn --ws {args.ws}, {deflate}; "
              f"{args.client_processes} client process(es)")  # fmt: skip
        print(f"layer: {args.layer} ({layer}); {args.seconds:.0f} s measured after {WARMUP:.0f} s warm-up")
        print(f"series: {len(plan['nodes']) * GPUS_PER_NODE} GPUs at 1 Hz on {len(plan['nodes'])} nodes; "
              f"{len(plan['jobs'])} jobs")  # fmt: skip
        mix = socket_mix(args.sockets, len(plan["nodes"]), args.course_sockets)
        print(f"sockets: {len(seqs)} ({sum(1 for s in seqs if s)} received frames, {len(errors)} failed): "
              f"{mix[0]} on job pages, {mix[1]} on the class dashboard, {mix[2]} on node pages")  # fmt: skip
        for error in sorted(set(errors))[:5]:
            print(f"  {errors.count(error)} socket(s) failed: {error}")
        print(f"latency sample→client: p50 {percentile(latencies, 50):.0f} ms, p95 {percentile(latencies, 95):.0f} ms, "
              f"p99 {percentile(latencies, 99):.0f} ms, max {max(latencies, default=0.0):.0f} ms")  # fmt: skip
        for kind, values in by_kind.items():
            mine = [s for s in sockets if f"/{kind}s/" in s["path"]]
            frames_per_s = sum(len(s["seqs"]) for s in mine) / max(1, len(mine)) / args.seconds
            kib_per_s = sum(s["bytes"] for s in mine) / max(1, len(mine)) / args.seconds / 1024
            first_kib = [s.get("first_bytes", 0) / 1024 for s in mine]
            print(f"  {kind} pages: p50 {percentile(values, 50):.0f} ms, p95 {percentile(values, 95):.0f} ms, "
                  f"max {max(values, default=0.0):.0f} ms; per socket {frames_per_s:.1f} frames/s, {kib_per_s:.1f} "
                  f"KiB/s, first message p50 {percentile(first_kib, 50):.0f} KiB")  # fmt: skip
        slices = [[ms for at, ms in arrivals if start <= at < start + 15] for start in range(0, int(args.seconds), 15)]
        print("p95 by 15 s of the measurement: " + ", ".join(f"{percentile(v, 95):.0f}" for v in slices if v) + " ms")
        opened = [s["first"] for s in sockets if "first" in s]
        print(f"opening (connect to first message read): p50 {1000 * percentile(opened, 50):.0f} ms, "
              f"p95 {1000 * percentile(opened, 95):.0f} ms, max {1000 * max(opened, default=0.0):.0f} ms")  # fmt: skip
        print(f"delivered: {received}/{expected} frames = {100 * delivered:.3f} %")
        print(
            f"server CPU: {', '.join(f'{c:.2f}' for c in server_cores)} cores; "
            f"producer (collector publish path) CPU: {producer_cores:.2f} cores; "
            f"clients: {', '.join(f'{c / (args.seconds + WARMUP):.2f}' for c in client_cores)} cores"
        )
        # Per socket: the growth from the first wave of sockets to all of them, so start-up imports do not count.
        per_socket = (rss_all - rss_first) / max(1, len(seqs) - FIRST_WAVE)
        print(
            f"server memory (all processes): {rss_first / 1024:.0f} MiB with {FIRST_WAVE} sockets, "
            f"{rss_all / 1024:.0f} MiB with {len(seqs)}, peak {rss_peak / 1024:.0f} MiB; "
            f"{per_socket:.0f} KiB per socket"
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
