"""Pages in Chromium after an hour of telemetry: what a person feels when opening them, and while they stay open.

    .venv/bin/python bench/browser_pages.py [--minutes 2] [--pages job,node,course,finished]

The telemetry is published through the collector's own path (LiveState → FrameBuilder → Publisher, the
collector's publish step), on a simulated clock for the past and at 1 Hz for the live part:
- nodes of 8 GPUs with CPU, memory and a disk; 60 students (--students) with one running job each (1 GPU, the
  first student's job 2 GPUs) whose trainer prints a point every 10 s, running for the last 60 minutes;
- one job of the first student that ran from 75 to 62 minutes ago on a node of its own, now completed.
Pages, each opened alone in one Chromium (Debian's) against uvicorn serving portal.asgi:
- job: the first student's running job (60 minutes of history), node: the node of that job (8 GPUs x 60 min),
  course: the class dashboard (60 students), finished: the completed job, an hour after it ended.

Printed per page:
- open: time to interactive (navigation start to the end of the last long task before 5 s without one) and
  total blocking time (the sum of each long task's time past 50 ms, PerformanceObserver "longtask"), and how
  long a click on the page's heading took to be handled right after the page loaded;
- live: script time per live frame, p50/p95 (the frame's WebSocket handler plus the animation-frame and timer
  callbacks that ran before the next frame), measured while frames arrive at 1 Hz for --minutes with every page open;
- JS heap used (after a forced GC) when opened, every 5 minutes, and after --minutes open.
--profile prints where the script time went (CPU profiles on open and live); --screenshots DIR saves each page
at 1280 and 390 px wide, once opened and at the end. --heap-diff takes a heap snapshot of each page at the first
5-minute heap figure and at the end, and prints what grew between them and what was made since and is still held
(bench/heap_snapshot.py; the snapshots are saved to bench/results/*.heapsnapshot).
Uses its own database (test_<DATABASE_URL name>_bench) and the Redis database of REDIS_URL (default 2).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, load_env, percentile, start, stop, wait_for
from cpu_profile import CpuProfile, summarize
from heap_snapshot import compare
from heap_snapshot import take as take_snapshot

GPUS_PER_NODE, STUDENTS = 8, 60
HISTORY_MINUTES, FINISHED_FROM, FINISHED_TO = 60, 75, 62  # minutes before now
TRAINER_EVERY = 10  # seconds between trainer points
HEAP_EVERY = 300.0  # seconds between the heap figures printed while the pages stay open
PROBE_EVERY = 30.0  # seconds between collections of the probe's records from the pages
QUIET_SECONDS = 5.0  # a page is interactive once no long task has started for this long
OPEN_TIMEOUT = 240.0
CHROMIUM = "/usr/bin/chromium"

# Installed before any page script: long tasks, and the time spent in socket handlers and animation frames.
PROBE = """
(() => {
  const probe = window.__probe = { longtasks: [], events: [] };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) probe.longtasks.push([e.startTime, e.duration]);
  }).observe({ type: "longtask", buffered: true });
  const timed = (kind, fn) => function (...args) {
    const t0 = performance.now();
    try { return fn.apply(this, args); } finally { probe.events.push([kind, t0, performance.now() - t0]); }
  };
  const raf = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = (cb) => raf(timed("raf", cb));
  for (const name of ["setTimeout", "setInterval"]) {
    const original = window[name].bind(window);
    window[name] = (cb, ...rest) => original(typeof cb === "function" ? timed("timer", cb) : cb, ...rest);
  }
  const desc = Object.getOwnPropertyDescriptor(WebSocket.prototype, "onmessage");
  Object.defineProperty(WebSocket.prototype, "onmessage", {
    set(fn) {
      desc.set.call(this, (event) => {
        const t0 = performance.now();
        try { fn.call(this, event); } finally {
          const spent = performance.now() - t0; // the probe's own look at the message is not the page's time
          const frame = typeof event.data === "string" && event.data.startsWith('{"type":"frame"');
          probe.events.push([frame ? "frame" : "message", t0, spent]);
        }
      });
    },
    get() { return desc.get.call(this); },
  });
})();
"""


# -- the lab's rows -------------------------------------------------------------------------------------------------
def setup_database():
    """load_env() points REDIS_URL at database 2; a REDIS_URL given by the caller wins."""
    given = os.environ.get("REDIS_URL")
    load_env()
    if given:
        os.environ["REDIS_URL"] = given
    name = os.environ["DATABASE_URL"].rsplit("/", 1)
    os.environ["DATABASE_URL"] = f"{name[0]}/{name[1]}_bench"  # never the test suite's test_<name>
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    return lambda: connection.creation.destroy_test_db(old_name, verbosity=0)


def build_plan(students: int = STUDENTS) -> dict:
    from datetime import timedelta

    from common import make_lab
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.utils import timezone

    from courses.models import Enrollment, Role
    from jobs.models import Job
    from telemetry.models import Node

    course, _, cluster, template = make_lab()
    users = get_user_model().objects
    instructor = users.create_user("bench-instructor", password="bench-password-123")
    Enrollment.objects.create(course=course, user=instructor, role=Role.INSTRUCTOR)
    admin = users.create_superuser("bench-admin", password="bench-password-123")
    node_count = -(-(students + 1) // GPUS_PER_NODE)  # enough for one GPU each, two for the first student
    nodes = [Node.objects.create(cluster=cluster, name=f"gpu{n:02d}", gpus=GPUS_PER_NODE) for n in range(node_count)]
    nodes.append(Node.objects.create(cluster=cluster, name="gpu-old", gpus=GPUS_PER_NODE))  # the finished job's
    now = timezone.now()
    jobs, slot = [], 0
    for s in range(students):
        owner = users.create_user(f"student{s:02d}", password="bench-password-123")
        Enrollment.objects.create(course=course, user=owner)
        gpus = 2 if s == 0 else 1
        node = nodes[slot // GPUS_PER_NODE]
        indexes = list(range(slot % GPUS_PER_NODE, slot % GPUS_PER_NODE + gpus))
        slot += gpus
        job = Job.objects.create(
            owner=owner, course=course, template=template, cluster=cluster, state="running", gpus=gpus,
            scheduler_id=str(5000 + s), started_at=now - timedelta(minutes=HISTORY_MINUTES),
        )  # fmt: skip
        jobs.append({"id": str(job.pk), "owner": owner.username, "node_id": node.pk, "indexes": indexes})
    first = users.get(username="student00")
    finished = Job.objects.create(
        owner=first, course=course, template=template, cluster=cluster, state="completed", gpus=2, exit_code=0,
        scheduler_id="4999", started_at=now - timedelta(minutes=FINISHED_FROM),
        finished_at=now - timedelta(minutes=FINISHED_TO),
    )  # fmt: skip

    def cookie(user) -> str:
        client = Client()
        client.force_login(user)
        return client.cookies["sessionid"].value

    return {
        "course_id": course.pk,
        "course_slug": course.slug,
        "nodes": [{"id": n.pk, "name": n.name} for n in nodes],
        "jobs": jobs,
        "finished": {"id": str(finished.pk), "owner": first.username, "node_id": nodes[-1].pk, "indexes": [0, 1]},
        "cookies": {"student": cookie(first), "instructor": cookie(instructor), "admin": cookie(admin)},
        "now": time.time(),
    }


# -- the producer: the collector's publish path, first on a simulated clock, then live ------------------------------
def produce(plan: dict) -> None:
    import django

    django.setup()
    from telemetry.collector.run import Collector
    from telemetry.live import JobRef
    from telemetry.parsers import CpuSample, DiskSample, GpuSample, HostSample, TrainerPoint
    from telemetry.stream import Publisher

    collector = Collector(cluster_names=["bench-none"])
    state = collector.state
    rng = random.Random(11)
    for node in plan["nodes"]:
        state.node(node["id"], 0, node["name"])

    def ref(job: dict) -> tuple:
        return (JobRef(job["id"], job["owner"], plan["course_id"], len(job["indexes"])), job["node_id"],
                tuple(job["indexes"]))  # fmt: skip

    def sample_nodes(node_ids, t: float) -> None:
        for node_id in node_ids:
            gpus = [
                GpuSample(i, f"GPU-{node_id}-{i}", rng.uniform(20, 100), rng.uniform(0, 60), rng.uniform(1e3, 8e4),
                          81559.0, rng.uniform(80, 700), rng.uniform(30, 80), 1980.0)
                for i in range(GPUS_PER_NODE)
            ]  # fmt: skip
            state.put_gpus(node_id, gpus, at=t)
            host = HostSample(
                cpu=CpuSample(rng.uniform(5, 90), rng.uniform(0, 5), 10.0),
                disks=(DiskSample("nvme0n1", rng.uniform(0, 60), rng.uniform(0, 3), rng.uniform(0, 3), 1e3, 1e3),),
            )
            state.put_host(node_id, host, (int(rng.uniform(20, 200) * 2**30), 512 * 2**30))
            state.nodes[node_id].host_at = t

    def trainer(job_ids, step_of: dict) -> None:
        for job_id in job_ids:
            step = step_of[job_id] = step_of.get(job_id, 0) + 50
            state.add_trainer_points(job_id, [TrainerPoint(0, step, 8.0 * 0.999**step + rng.uniform(0, 0.1),
                                                           rng.uniform(9e3, 1.1e4), 41.0)])  # fmt: skip

    running_nodes = sorted({job["node_id"] for job in plan["jobs"]})
    running_ids = [job["id"] for job in plan["jobs"]]
    finished = plan["finished"]
    steps: dict = {}

    async def tick(publisher, t: float) -> None:
        await publish_at(collector, publisher, t)

    flushes: list[tuple[int, float]] = []  # the series store's writes: rows, seconds
    recorder = getattr(collector, "recorder", None)
    if recorder is not None:
        flush = recorder.flush

        def timed_flush(*args, **kwargs):
            rows = flush(*args, **kwargs)
            flushes.append(recorder.last_cost)
            return rows

        recorder.flush = timed_flush

    async def run() -> None:
        publisher = Publisher()
        now = plan["now"]
        t = now - FINISHED_FROM * 60
        started = time.monotonic()
        while t < now:  # the past, one simulated second per tick
            finished_runs = now - FINISHED_FROM * 60 <= t < now - FINISHED_TO * 60
            jobs_running = t >= now - HISTORY_MINUTES * 60
            state.put_allocations(0, ([ref(j) for j in plan["jobs"]] if jobs_running else [])
                                  + ([ref(finished)] if finished_runs else []))  # fmt: skip
            nodes = (running_nodes if jobs_running else []) + ([finished["node_id"]] if finished_runs else [])
            sample_nodes(nodes, t)
            if int(t) % TRAINER_EVERY == 0:
                trainer((running_ids if jobs_running else []) + ([finished["id"]] if finished_runs else []), steps)
            await tick(publisher, t)
            t += 1.0
        state.put_allocations(0, [ref(j) for j in plan["jobs"]])
        print(f"history published in {time.monotonic() - started:.0f} s", flush=True)
        if flushes:
            rows, seconds = sum(r for r, _ in flushes), [s for _, s in flushes]
            print(f"series store: {len(flushes)} flushes (one per simulated minute), {rows} rows, "
                  f"p50 {1000 * percentile(seconds, 50):.1f} ms, p95 {1000 * percentile(seconds, 95):.1f} ms, "
                  f"max {1000 * max(seconds):.1f} ms per flush", flush=True)  # fmt: skip
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # the pages are open
        print("live", flush=True)
        while True:
            t = time.time()
            sample_nodes(running_nodes, t)
            if int(t) % TRAINER_EVERY == 0:
                trainer(running_ids, steps)
            await tick(publisher, t)
            await asyncio.sleep(max(0.0, 1.0 - (time.time() - t)))

    asyncio.run(run())


async def publish_at(collector, publisher, t: float) -> None:
    """One collector tick at time t: its publish step when it takes a clock, else the same steps spelled out."""
    import inspect

    if "now" in inspect.signature(collector.publish_once).parameters:
        await collector.publish_once(publisher, now=t)
        return
    from jobs import trainer_curve
    from telemetry.collector.run import _point

    snapshot = collector.state.take()
    frames = collector.builder.build(snapshot, t)
    await publisher.publish(frames, now_ms=int(t * 1000))
    if snapshot.trainer:
        async with publisher.redis.pipeline(transaction=False) as pipe:
            for job_id, points in snapshot.trainer.items():
                trainer_curve.add_curve_points(pipe, job_id, [_point(p) for p in points])
            await pipe.execute()


# -- the browser ----------------------------------------------------------------------------------------------------
def open_page(context, url: str, profile: Path | None = None) -> tuple[object, dict]:
    page = context.new_page()
    page.add_init_script(PROBE)
    profiler = CpuProfile(page) if profile else None
    started = time.monotonic()
    page.goto(url, wait_until="load", timeout=OPEN_TIMEOUT * 1000)
    # A click right after load: Playwright returns once the page has handled it, after any task already running.
    t0 = time.monotonic()
    page.locator("h1").click(timeout=OPEN_TIMEOUT * 1000)
    click_ms = (time.monotonic() - t0) * 1000
    while time.monotonic() - started < OPEN_TIMEOUT:
        time.sleep(1.0)
        probe = page.evaluate("({now: performance.now(), longtasks: window.__probe.longtasks})")
        last_end = max((s + d for s, d in probe["longtasks"]), default=0.0)
        if probe["now"] - last_end > QUIET_SECONDS * 1000 and probe["now"] > QUIET_SECONDS * 1000:
            break
    nav = page.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
    if profiler:
        print(f"{profile.stem}:\n{summarize(profiler.stop(profile))}", flush=True)
    tasks = probe["longtasks"]
    return page, {
        "tti_ms": max([nav, *(s + d for s, d in tasks)]),
        "tbt_ms": sum(max(0.0, d - 50) for _, d in tasks),
        "longest_task_ms": max((d for _, d in tasks), default=0.0),
        "click_ms": click_ms,
        "heap_open_mib": heap_mib(page),
    }


def shoot(opened: dict, folder: str | None, when: str) -> None:
    """Full-page screenshots of every open page at a laptop's width and a phone's (390 px), to look at."""
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    for name, page in opened.items():
        for width, height in ((1280, 900), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            page.wait_for_timeout(1500)  # the charts take the new width
            # Charts out of view keep their points until shown: scroll them into view, as a reader would.
            for top in range(0, page.evaluate("document.body.scrollHeight"), height // 2):
                page.evaluate(f"window.scrollTo(0, {top})")
                page.wait_for_timeout(400)
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=f"{folder}/{name}-{when}-{width}.png", full_page=True)
        page.set_viewport_size({"width": 1280, "height": 900})


def heap_mib(page) -> float:
    cdp = page.context.new_cdp_session(page)
    cdp.send("HeapProfiler.collectGarbage")
    used = cdp.send("Runtime.getHeapUsage")["usedSize"]
    cdp.detach()
    return used / 2**20


def live_costs(events: list, since_ms: float) -> tuple[list[float], dict[str, float]]:
    """Script time per live frame (its socket handler plus the animation frames and timers before the next
    frame), and the total time by kind of callback, from the probe's records [kind, start, duration]."""
    events = sorted((e for e in events if e[1] >= since_ms), key=lambda e: e[1])
    costs: list[float] = []
    by_kind: dict[str, float] = {}
    for kind, _, duration in events:
        if kind == "frame":
            costs.append(duration)
        elif costs:
            costs[-1] += duration
        if costs:
            by_kind[kind] = by_kind.get(kind, 0.0) + duration
    return costs, by_kind


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=2.0, help="how long every page stays open with live frames")
    parser.add_argument("--pages", default="job,node,course,finished")
    parser.add_argument("--students", type=int, default=STUDENTS, help="fewer for a quick look (the class page)")
    parser.add_argument("--role", choices=["main", "producer"], default="main")
    parser.add_argument("--plan")
    parser.add_argument("--screenshots", help="a folder: each page at 1280 px and 390 px once opened, and at the end")
    parser.add_argument("--profile", action="store_true", help="print where script time goes (CPU profiles, saved "
                        "to bench/results/*.cpuprofile) on open and live")  # fmt: skip
    parser.add_argument("--heap-diff", action="store_true", help="heap snapshots at 5 minutes and at the end, "
                        "compared: what the pages keep (bench/heap_snapshot.py)")  # fmt: skip
    args = parser.parse_args()
    if args.role == "producer":
        return produce(json.loads(Path(args.plan).read_text()))

    teardown = setup_database()
    results = ROOT / "bench/results"
    results.mkdir(parents=True, exist_ok=True)
    procs = []
    try:
        import redis
        from django.conf import settings
        from playwright.sync_api import sync_playwright

        client = redis.Redis.from_url(settings.TELEMETRY_REDIS_URL)
        for key in client.scan_iter("gpulab:*"):
            client.delete(key)
        plan = build_plan(args.students)
        plan_path = results / "browser_plan.json"
        plan_path.write_text(json.dumps(plan))
        producer = subprocess.Popen(
            [sys.executable, __file__, "--role", "producer", "--plan", str(plan_path)],
            cwd=ROOT, env={**os.environ, "DATABASE_URL": _db_url()}, stdin=subprocess.PIPE,
            stdout=(results / "browser_producer.log").open("w"), stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        procs.append(producer)
        port = 8793
        url = f"http://127.0.0.1:{port}"
        server = start(
            [str(ROOT / ".venv/bin/uvicorn"), "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port),
             "--log-level", "warning"],
            results / "browser_server.log",
        )  # fmt: skip
        procs.append(server)
        producer_log = results / "browser_producer.log"
        wait_for(lambda: "history published" in producer_log.read_text(), 1800, "the history to be published")
        print(producer_log.read_text().strip(), flush=True)
        job, finished = plan["jobs"][0], plan["finished"]
        pages = {
            "job": (f"/jobs/{job['id']}/", "student"),
            "node": (f"/nodes/{job['node_id']}/", "admin"),
            "course": (f"/courses/{plan['course_slug']}/dashboard/", "instructor"),
            "finished": (f"/jobs/{finished['id']}/", "student"),
        }
        chosen = [name for name in args.pages.split(",") if name in pages]
        figures: dict[str, dict] = {}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
            )
            opened = {}
            for name in chosen:
                path, who = pages[name]
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                context.add_cookies([{"name": "sessionid", "value": plan["cookies"][who], "url": url}])
                profile = results / f"open-{name}.cpuprofile" if args.profile else None
                opened[name], figures[name] = open_page(context, url + path, profile)
                print(f"{name}: opened {json.dumps({k: round(v, 1) for k, v in figures[name].items()})}", flush=True)
            shoot(opened, args.screenshots, "open")
            marks = {name: page.evaluate("performance.now()") for name, page in opened.items()}
            profilers = {name: CpuProfile(page) for name, page in opened.items()} if args.profile else {}
            producer.stdin.write("go\n")
            producer.stdin.flush()
            heaps = {name: [figures[name]["heap_open_mib"]] for name in opened}
            events: dict[str, list] = {name: [] for name in opened}
            ends = time.monotonic() + args.minutes * 60
            next_heap = time.monotonic() + HEAP_EVERY
            snapshots: dict = {}
            while (left := ends - time.monotonic()) > 0:
                time.sleep(min(left, PROBE_EVERY))
                for name, page in opened.items():
                    # The probe's own records leave the page, so they do not count in its heap.
                    events[name] += page.evaluate("window.__probe.events.splice(0)")
                if time.monotonic() < min(next_heap, ends):
                    continue
                next_heap += HEAP_EVERY
                for name, page in opened.items():
                    heaps[name].append(heap_mib(page))
                    if args.heap_diff and name not in snapshots:
                        snapshots[name] = take_snapshot(page, results / f"{name}-5min.heapsnapshot")
                print(
                    "heap (MiB, after a GC) since open: "
                    + "; ".join(f"{name} {' '.join(f'{h:.1f}' for h in values)}" for name, values in heaps.items()),
                    flush=True,
                )
            for name, first in snapshots.items():
                last = take_snapshot(opened[name], results / f"{name}-end.heapsnapshot")
                print(f"{name}: heap kept from 5 minutes to the end\n{compare(first, last)}", flush=True)
            for name, profiler in profilers.items():
                print(f"live-{name}:\n{summarize(profiler.stop(results / f'live-{name}.cpuprofile'))}", flush=True)
            for name, page in opened.items():
                costs, by_kind = live_costs(events[name] + page.evaluate("window.__probe.events"), marks[name])
                split = ", ".join(f"{k} {total / max(1, len(costs)):.1f} ms" for k, total in sorted(by_kind.items()))
                print(f"{name}: per live frame on average: {split}", flush=True)
                figures[name].update(
                    frames=len(costs),
                    frame_p50_ms=percentile(costs, 50),
                    frame_p95_ms=percentile(costs, 95),
                    heap_after_mib=heaps[name][-1],
                )
            shoot(opened, args.screenshots, "end")
            browser.close()
        print(f"\n{len(chosen)} pages; history {HISTORY_MINUTES} min, {len(plan['nodes']) - 1} nodes x "
              f"{GPUS_PER_NODE} GPUs, {args.students} students; live {args.minutes:g} min at 1 Hz with every page "
              f"open; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
        print(f"{'page':9} {'TTI s':>7} {'TBT ms':>8} {'longest':>8} {'click ms':>9} {'frames':>7} "
              f"{'p50 ms':>7} {'p95 ms':>7} {'heap open':>10} {'heap end':>9}")  # fmt: skip
        for name in chosen:
            f = figures[name]
            print(f"{name:9} {f['tti_ms'] / 1000:7.1f} {f['tbt_ms']:8.0f} {f['longest_task_ms']:8.0f} "
                  f"{f['click_ms']:9.0f} {f['frames']:7d} {f['frame_p50_ms']:7.2f} {f['frame_p95_ms']:7.2f} "
                  f"{f['heap_open_mib']:8.1f}Mi {f['heap_after_mib']:7.1f}Mi")  # fmt: skip
    finally:
        for proc in procs:
            stop(proc)
        teardown()


def _db_url() -> str:
    from common import database_url

    return database_url()


if __name__ == "__main__":
    main()
