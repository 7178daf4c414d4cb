"""Pages in their long-lived states, in Chromium on the real stack (uvicorn, Redis, PostgreSQL): a job and a node
opened on an hour of telemetry, a finished job's page an hour after it ended, empty states, a phone.

The hour is published through the collector's own publish step (LiveState → FrameBuilder → series recorder →
Redis ring and channel layer) on a simulated clock, one tick per simulated second.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs.models import Job, JobTemplate
from telemetry.live import JobRef
from telemetry.models import Node, SeriesChunk
from telemetry.parsers import CpuSample, DiskSample, GpuSample, HostSample, TrainerPoint

from . import made_up
from .test_browser import log_in

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("GPULAB_SCREENSHOT_DIR", "/tmp")
GPUS = 8


@pytest.fixture
def browser(chromium):
    def new_page(width: int = 1280, height: int = 900):
        return chromium.new_context(viewport={"width": width, "height": height}).new_page()

    return new_page


@pytest.fixture
def tiny_lm(course):
    template = JobTemplate.objects.create(
        name="Tiny LM",
        slug="tiny-lm-test",
        body="python ~/gpulab/trainer/train.py --max_steps 100000\n",
        status=JobTemplate.Status.PUBLISHED,
    )
    template.courses.add(course)
    return template


@pytest.fixture
def node(cluster):
    return Node.objects.create(cluster=cluster, name="gpu07", address="127.0.0.1", gpus=GPUS, has_gpu=True)


@pytest.fixture
def clean_ring(portal_env):
    import redis

    client = redis.Redis.from_url(portal_env["REDIS_URL"])
    for key in client.scan_iter("gpulab:telemetry:*"):
        client.delete(key)


def make_job(owner, template, cluster, *, state="running", started_min=60, finished_min=None, gpus=2) -> Job:
    now = timezone.now()
    return Job.objects.create(
        owner=owner, course=template.courses.first(), template=template, cluster=cluster, state=state, gpus=gpus,
        scheduler_id=made_up.scheduler_id(), started_at=now - timedelta(minutes=started_min),
        finished_at=None if finished_min is None else now - timedelta(minutes=finished_min),
        exit_code=None if finished_min is None else 0,
    )  # fmt: skip


def publish(node: Node, jobs: list[tuple[Job, tuple[int, ...]]], start: float, end: float) -> None:
    """One collector tick per simulated second from start to end (epoch seconds); trainer points every 10 s."""
    from telemetry.collector.run import Collector
    from telemetry.stream import Publisher

    def run() -> None:
        collector = Collector(cluster_names=["no-cluster"])
        state = collector.state
        state.node(node.pk, node.cluster_id, node.name)
        refs = [
            (JobRef(str(j.pk), j.owner.username, j.course_id, len(idx), j.template.name), node.pk, idx)
            for j, idx in jobs
        ]
        state.put_allocations(node.cluster_id, refs)

        async def ticks() -> None:
            publisher = Publisher()
            t, step = start, 0
            while t < end:
                wave = 50 + 45 * math.sin(t / 300)
                gpus = [GpuSample(i, f"GPU-{i}", wave if i < 4 else 0.0, 30.0, 40000.0 + 100 * i, 81559.0,
                                  300.0 + 10 * i, 60.0 + i, 1980.0) for i in range(GPUS)]  # fmt: skip
                state.put_gpus(node.pk, gpus, at=t)
                host = HostSample(cpu=CpuSample(40.0, 1.0, 59.0), disks=(DiskSample("sda", 5.0, 1.0, 2.0, 1.0, 1.0),))
                state.put_host(node.pk, host, (32 * 2**30, 256 * 2**30))
                state.nodes[node.pk].host_at = t
                if int(t) % 10 == 0:
                    step += 50
                    for ref, _, _ in refs:
                        state.add_trainer_points(ref.job_id, [TrainerPoint(0, step, 9.0 / (1 + step / 500), 12000.0)])
                await collector.publish_once(publisher, now=t)
                t += 1.0
            await publisher.close()

        asyncio.run(ticks())
        collector.store_series(end, closing=True)  # as the collector does when it stops

    thread = threading.Thread(target=run)  # Playwright's sync API holds this thread's event loop
    thread.start()
    thread.join()


def chart(page, name: str) -> dict:
    """What a chart holds: trace names, lengths and the span of its x values (ms, or steps)."""
    return page.evaluate(
        """(name) => {
          const el = document.querySelector(`[data-chart="${name}"]`);
          const data = el.data || [];
          const xs = data.flatMap((t) => t.x.filter((x, i) => t.y[i] !== null));
          return {names: data.map((t) => t.name), lengths: data.map((t) => t.x.length),
                  span: xs.length ? Math.max(...xs) - Math.min(...xs) : 0, first: Math.min(...xs),
                  label: el.getAttribute("aria-label"), colors: data.map((t) => t.line.color + t.line.dash)};
        }""",
        name,
    )


def drawn(page, name: str) -> None:
    page.wait_for_function(f"(document.querySelector('[data-chart=\"{name}\"]').data || []).length > 0", timeout=30_000)


@pytest.mark.timeout(300)
def test_job_and_node_pages_open_on_an_hour_of_history_drawn_once_and_answer_clicks(
    web, browser, clean_ring, alice, bob, admin_user, tiny_lm, cluster, node
):
    mine = make_job(alice, tiny_lm, cluster)
    theirs = make_job(bob, tiny_lm, cluster)
    now = time.time()
    publish(node, [(mine, (0, 1)), (theirs, (2, 3))], now - 3600, now)

    page = browser()
    log_in(page, web, "alice")
    page.goto(f"{web.url}/jobs/{mine.pk}/")
    drawn(page, "gpu-util")
    # The page answers at once: the table view opens on a click.
    page.locator("[data-chart-box=gpu-util] summary").click()
    expect(page.locator("[data-chart-box=gpu-util] [data-table] table")).to_be_visible()
    util = chart(page, "gpu-util")
    assert util["names"] == ["GPU 0 · gpu07", "GPU 1 · gpu07"]  # the job's own GPUs
    assert all(n <= 600 for n in util["lengths"]), util["lengths"]
    assert util["span"] >= 55 * 60_000, util["span"]  # the whole hour, not the ring's ten minutes
    loss = chart(page, "loss")
    assert loss["lengths"][0] <= 600 and loss["span"] >= 300 * 50 * 0.9  # steps over the hour
    assert "GPU utilization (%)" in util["label"] and "newest" in util["label"]
    # The legend names each line; the colon uPlot puts before a value comes only with the cursor's value.
    legend = page.evaluate(
        """[...document.querySelectorAll('[data-chart="gpu-util"] .u-legend .u-series')].slice(1).map((row) =>
             row.innerText.trim() + getComputedStyle(row.querySelector('th'), '::after').content)"""
    )
    assert legend == ["GPU 0 · gpu07none", "GPU 1 · gpu07none"], legend
    expect(page.locator("[data-socket-state]")).to_have_text("live")
    page.screenshot(path=f"{SHOTS}/gpulab-job-hour.png", full_page=True)

    # A chart out of view is not drawn, and what arrives for it is folded into its columns rather than queued for as
    # long as the page stays open: of 1,500 points fewer than 120 are left waiting, the rest are in the columns.
    page.evaluate("window.scrollTo(0, 0)")
    name = page.evaluate(
        "[...document.querySelectorAll('[data-chart]')].map((el) => el.telemetryChart)"
        ".filter((c) => c && c.drawn && !c.byStep).at(-1).box.dataset.chartBox"
    )  # the last chart by time
    box = page.locator(f"[data-chart-box={name}]")
    assert box.bounding_box()["y"] > 900, f"{name} starts below the fold"
    kept = page.evaluate(
        """(name) => {
          const chart = document.querySelector(`[data-chart="${name}"]`).telemetryChart;
          const [key, label, waiting] = [chart.keys[0], chart.names[0], chart.queue.length];
          const last = Math.max(chart.xs.at(-1), ...chart.queue.map((p) => p.x)); // live frames queue meanwhile
          const step = 1000;
          const drawnAt = chart.drawnAt;
          for (let i = 1; i <= 1500; i++) chart.push({ chart: name, key, name: label, x: last + i * step, y: i % 7 });
          const folded = 1500 - ((1500 + waiting) % 120); // the points in the columns by now
          return { waiting, queued: chart.queue.length, newest: chart.xs.at(-1),
                   expected: last + folded * step, columns: chart.xs.length,
                   redrawn: chart.drawnAt !== drawnAt, shows: chart.plot.data[0] === chart.xs };
        }""",
        name,
    )
    assert kept["waiting"] < 120 and kept["queued"] < 120 and kept["newest"] == kept["expected"], kept
    # Thinned every 120 new x values (not drawn yet): the columns stay within HISTORY_POINTS + 120.
    assert kept["columns"] <= 720 and not kept["redrawn"] and not kept["shows"], kept
    box.scroll_into_view_if_needed()
    page.wait_for_function(
        f"(() => {{ const c = document.querySelector('[data-chart=\"{name}\"]').telemetryChart;"
        " return c.plot.data[0] === c.xs && !c.unshown; })()",
        timeout=15_000,
    )

    page = browser()
    log_in(page, web, "ada")
    page.goto(f"{web.url}/nodes/{node.pk}/")
    drawn(page, "gpu-util")
    page.locator("h1").click()
    util = chart(page, "gpu-util")
    assert len(util["names"]) == GPUS and all(n <= 600 for n in util["lengths"])
    assert util["span"] >= 55 * 60_000
    assert util["names"][1] == "GPU 1 · alice's Tiny LM" and util["names"][2] == "GPU 2 · bob's Tiny LM"
    assert util["names"][7] == "GPU 7 · free"
    assert len(set(util["colors"])) == GPUS  # every line its own colour
    page.screenshot(path=f"{SHOTS}/gpulab-node-hour.png", full_page=True)


@pytest.mark.timeout(300)
def test_a_finished_job_shows_its_recorded_curves_an_hour_later(
    web, browser, clean_ring, alice, tiny_lm, cluster, node
):
    job = make_job(alice, tiny_lm, cluster, state="completed", started_min=80, finished_min=60)
    now = time.time()
    publish(node, [(job, (0, 1))], now - 80 * 60, now - 60 * 60)
    assert SeriesChunk.objects.filter(job=job).count() >= 20  # one row per minute of the run

    page = browser()
    log_in(page, web, "alice")
    page.goto(f"{web.url}/jobs/{job.pk}/")
    drawn(page, "gpu-util")
    drawn(page, "loss")
    expect(page.locator("[data-socket-state]")).to_have_text("recorded")
    util, loss = chart(page, "gpu-util"), chart(page, "loss")
    assert util["span"] >= 19 * 60_000 and loss["span"] >= 100 * 50 * 0.9
    # Real dates on the axis (local time), within the run: not January 2000.
    first = page.evaluate("(x) => new Date(x + new Date().getTimezoneOffset() * 60000).getFullYear()", util["first"])
    assert first == timezone.now().year
    axis_from = page.evaluate("document.querySelector('[data-chart=gpu-util]').chart.scales.x.min")  # uPlot's x scale
    assert page.evaluate("(x) => new Date(x).getFullYear()", axis_from) == timezone.now().year
    page.screenshot(path=f"{SHOTS}/gpulab-finished-job.png", full_page=True)


def test_a_job_page_before_its_first_sample_says_so_and_fits_a_phone(
    web, browser, clean_ring, alice, sleep_template, cluster
):
    job = make_job(alice, sleep_template, cluster, started_min=0)
    page = browser(390, 844)
    log_in(page, web, "alice")
    page.goto(f"{web.url}/jobs/{job.pk}/")
    expect(page.locator("[data-chart-box=gpu-util] [data-chart-empty]")).to_have_text("Waiting for the first sample…")
    expect(page.locator("[data-no-trainer]")).to_contain_text("This job prints no training metrics")
    assert page.locator("[data-chart=loss]").count() == 0  # a chart this template can never fill is not shown
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=f"{SHOTS}/gpulab-job-empty-phone.png", full_page=True)


@pytest.mark.timeout(300)
def test_a_nodes_hour_names_each_gpu_stretch_by_the_job_that_held_it(
    web, browser, clean_ring, alice, bob, admin_user, tiny_lm, cluster, node
):
    """alice's job held GPUs 0-1 for the first half hour, bob's since: the first half is alice's in the legend, in
    the stored hour and as live frames move the GPU to another holder."""
    first, second = make_job(alice, tiny_lm, cluster), make_job(bob, tiny_lm, cluster)
    now = time.time()
    publish(node, [(first, (0, 1))], now - 3600, now - 1800)
    publish(node, [(second, (0, 1))], now - 1800, now)
    page = browser()
    log_in(page, web, "ada")
    page.goto(f"{web.url}/nodes/{node.pk}/")
    drawn(page, "gpu-util")
    names = chart(page, "gpu-util")["names"]
    assert "GPU 0 · alice's Tiny LM" in names and "GPU 0 · bob's Tiny LM" in names, names
    spans = page.evaluate(
        """() => Object.fromEntries(document.querySelector('[data-chart="gpu-util"]').telemetryChart.traces()
             .map((t) => [t.name, [Math.min(...t.x), Math.max(...t.x)]]))"""
    )
    alice_span, bob_span = spans["GPU 0 · alice's Tiny LM"], spans["GPU 0 · bob's Tiny LM"]
    assert alice_span[1] <= bob_span[0] + 10_000, spans  # alice's stretch ends where bob's begins
    # Live: the GPU passes to another holder; bob's stretch keeps bob's name.
    moved = page.evaluate(
        """() => {
          const chart = document.querySelector('[data-chart="gpu-util"]').telemetryChart;
          const s = chart.names.indexOf("GPU 0 · bob's Tiny LM");
          const key = chart.keys[s];
          chart.append([{ chart: "gpu-util", key, name: "GPU 0 · free", x: chart.xs.at(-1) + 1000, y: 0 }]);
          return { key, keys: chart.keys, names: chart.names };
        }"""
    )
    assert moved["names"][moved["keys"].index(moved["key"])] == "GPU 0 · free", moved
    assert "GPU 0 · bob's Tiny LM" in moved["names"] and "GPU 0 · alice's Tiny LM" in moved["names"], moved
    page.screenshot(path=f"{SHOTS}/gpulab-node-two-holders.png", full_page=True)
