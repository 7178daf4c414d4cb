"""A comparison of a class's runs: N runs (50) with P points (2,000) in each stored series, on the server and in
Chromium.

    .venv/bin/python bench/compare.py [--runs 50] [--points 2000] [--repeat 5] [--screenshots DIR]

Each run is a finished Tiny LM-like job with the series the collector stores (loss and tok/s by step, GPU
utilization and memory in ten-second buckets, as SeriesChunk rows), one parameter differing per run. Printed:
- server: the comparison page's time (p50 and max of --repeat GETs through Django's test client, the whole view:
  access checks, one query for the series, the tables, the Plotly figures as JSON) and its size, and the API's;
- Chromium (Debian's, against uvicorn serving portal.asgi) at 1280 x 900: on open, the time to the first chart drawn,
  the charts drawn (the page draws a chart once it comes near the viewport), the total blocking time (the sum of each
  long task's time past 50 ms) and the longest task; then scrolled to the end as a person would, the time until every
  chart is drawn and the blocking time of that scroll.
Uses its own database (test_<DATABASE_URL name>) and the Redis database of BENCH_REDIS_DB (default 2).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import make_lab, session_cookie, setup_database, start_web, stop

CHROMIUM = "/usr/bin/chromium"
# Installed before any page script: long tasks, and when each Plotly chart first has its SVG (a chart has several).
PROBE = """
(() => {
  const probe = window.__probe = { longtasks: [], charts: [] };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) probe.longtasks.push([e.startTime, e.duration]);
  }).observe({ type: "longtask", buffered: true });
  new MutationObserver(() => {
    const drawn = document.querySelectorAll(".js-plotly-plot:has(.main-svg)").length;
    while (probe.charts.length < drawn) probe.charts.push(performance.now());
  }).observe(document, { childList: true, subtree: true });
})();
"""
SETTLE = 3  # seconds: a long task still running when the last chart appeared is counted too


def make_runs(count: int, points: int):
    """`count` finished runs of one template by one student, each with `points` points in every stored series."""
    from django.utils import timezone

    from clusters.identity import account_for
    from jobs.models import Job
    from telemetry.models import SeriesChunk

    course, student, cluster, template = make_lab()
    account = account_for(cluster, student)
    jobs = []
    for index in range(count):
        start = timezone.now() - timedelta(hours=2) + timedelta(seconds=index)
        wall = timedelta(seconds=10 * points)
        job = Job.objects.create(
            owner=student, course=course, template=template, cluster=cluster, account=account, script="true",
            params={"seconds": 1, "batch_size": 8 * (index + 1), "seq_len": 128}, gpus=1, state="completed",
            exit_code=0, started_at=start, finished_at=start + wall,
        )  # fmt: skip
        steps = [10 * (i + 1) for i in range(points)]
        times = [int(start.timestamp() * 1000) + 10_000 * i for i in range(points)]
        speed = 1000 + 20 * index
        series = {
            "loss": {"loss": {"name": "loss", "x": steps, "y": [round(4 * math.exp(-i / 600) + 1, 4) for i in steps]}},
            "tokens": {"tok": {"name": "tok/s", "x": steps, "y": [speed + (i * 7919) % 97 for i in range(points)]}},
            "gpu-util": {"g0": {"name": "GPU 0", "x": times, "y": [60 + (i * 31) % 40 for i in range(points)]}},
            "gpu-memory": {"g0": {"name": "GPU 0", "x": times, "y": [8000 + index * 10 for _ in range(points)]}},
        }
        SeriesChunk.objects.create(job=job, start=start, end=start + wall, series=series)
        jobs.append(job)
    return student, jobs


def server_figures(student, url: str, api_url: str, repeat: int) -> None:
    from django.test import Client

    client = Client()
    client.force_login(student)
    for name, address in (("page", url), ("API", api_url)):
        took, size = [], 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            response = client.get(address)
            took.append(time.perf_counter() - t0)
            assert response.status_code == 200, response.status_code
            size = len(response.content)
        print(
            f"server {name:4}: p50 {statistics.median(took) * 1000:.0f} ms, max {max(took) * 1000:.0f} ms, "
            f"{size / 1024:.0f} KiB",
            flush=True,
        )


def browser_figures(student, url: str, charts: int, shots: str | None = None) -> None:
    from playwright.sync_api import sync_playwright

    web, port = start_web("compare")
    cookie = session_cookie(student)  # before Playwright's event loop: Django's database calls are synchronous
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.add_cookies([{"name": "sessionid", "value": cookie, "url": f"http://127.0.0.1:{port}"}])
            page = context.new_page()
            page.add_init_script(PROBE)
            page.goto(f"http://127.0.0.1:{port}{url}", wait_until="load", timeout=120_000)
            page.wait_for_function("window.__probe.charts.length >= 1", timeout=120_000)
            time.sleep(SETTLE)
            opened = page.evaluate("window.__probe")
            scrolled_at = page.evaluate("performance.now()")
            scroll_through(page)
            page.wait_for_function(f"window.__probe.charts.length >= {charts}", timeout=120_000)
            time.sleep(SETTLE)
            probe = page.evaluate("window.__probe")
            if shots:
                Path(shots).mkdir(parents=True, exist_ok=True)
                page.screenshot(path=f"{shots}/compare-1280.png", full_page=True)
                page.set_viewport_size({"width": 390, "height": 844})
                time.sleep(2)
                page.screenshot(path=f"{shots}/compare-390.png", full_page=True)
            tasks, later = opened["longtasks"], probe["longtasks"][len(opened["longtasks"]) :]
            drawn = len(opened["charts"])
            rest = f"all {charts} charts {probe['charts'][-1] - scrolled_at:.0f} ms after" if drawn < charts else "-"
            print(
                f"chromium: on open, first chart {opened['charts'][0]:.0f} ms, {drawn} of {charts} charts drawn, "
                f"total blocking time {blocking(tasks):.0f} ms, longest task {longest(tasks):.0f} ms; scrolled to the "
                f"end: {rest}, blocking {blocking(later):.0f} ms, longest task {longest(later):.0f} ms",
                flush=True,
            )
            browser.close()
    finally:
        stop(web)


def scroll_through(page) -> None:
    """Down the page a screenful at a time, a moment on each, as a person reading it."""
    height = page.evaluate("document.scrollingElement.scrollHeight")
    for top in range(0, height, 600):
        page.evaluate(f"window.scrollTo(0, {top})")
        time.sleep(0.3)


def blocking(tasks: list) -> float:
    return sum(max(0.0, duration - 50) for _, duration in tasks)


def longest(tasks: list) -> float:
    return max((duration for _, duration in tasks), default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--points", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--screenshots", metavar="DIR", help="save the page at 1280 and 390 px wide")
    args = parser.parse_args()
    teardown = setup_database()
    try:
        from django.urls import reverse

        from experiments.curves import CHARTS

        student, jobs = make_runs(args.runs, args.points)
        ids = ",".join(str(job.pk) for job in jobs)
        url, api_url = f"{reverse('experiments:compare')}?jobs={ids}", f"{reverse('api:compare')}?jobs={ids}"
        print(f"{args.runs} runs x {args.points} points in each of {len(CHARTS)} series", flush=True)
        server_figures(student, url, api_url, args.repeat)
        browser_figures(student, url, len(CHARTS), args.screenshots)
    finally:
        teardown()


if __name__ == "__main__":
    main()
