"""A sweep's page in Chromium, on a laptop and on a 390 px phone: progress, the best run by the metric picked, the
parallel-coordinates chart and the comparison drawn with Plotly, and "Launch again with the best values"."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from sweeps.models import Sweep
from tests.test_compare import ran

from .test_pages_browser import no_sideways_scroll, signed_in

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("GPULAB_SHOTS", "/tmp/gpulab-shots")


@pytest.fixture
def ended_sweep(api_for, alice, cluster, sleep_template, monkeypatch):
    """A grid of 2 x 2 runs as it ends: three completed with their stored curves, one failed."""
    monkeypatch.setattr("core.enqueue.send", lambda name, args: None)  # no worker: the rows are made to have ended
    body = {
        "template": sleep_template.slug,
        "cluster": cluster.name,
        "params": {"partition": "debug", "gpus_per_node": 0},
        "swept": {"seconds": [1, 2], "exit_code": [0, 1]},
    }
    sweep = Sweep.objects.get(pk=api_for(alice).post("/api/v1/sweeps/", body, format="json").json()["id"])
    runs = list(Job.objects.filter(sweep_run__sweep=sweep).order_by("sweep_run__index"))
    for run, final in zip(runs[:3], (2.5, 1.25, 3.0), strict=True):
        ran(run, [1000.0, 1100.0], [4.0, final])
    ran(runs[3], [900.0], [5.0], state="failed", exit_code=1)
    return sweep, runs


@pytest.mark.timeout(120)
def test_the_sweep_page_shows_the_best_run_and_its_charts_on_a_phone_and_a_laptop(
    live_server, browser, alice, course, sleep_template, ended_sweep
):
    sweep, runs = ended_sweep
    for width in (390, 1280):
        page = signed_in(browser, live_server, "alice", width)
        page.goto(f"{live_server.url}/sweeps/{sweep.pk}/")
        expect(page.locator("#progress-done")).to_have_text("4 of 4 done")
        expect(page.locator("#best-run")).to_contain_text(runs[1].short_id)  # the lowest final loss, 1.25
        expect(page.locator("#sweep-parcoords .main-svg").first).to_be_visible()
        page.locator("[data-chart=loss]").scroll_into_view_if_needed()  # drawn once it is in view
        expect(page.locator("[data-chart=loss] .main-svg").first).to_be_visible()
        no_sideways_scroll(page) if width == 390 else None
        page.screenshot(path=f"{SHOTS}/sweep-{width}.png", full_page=True)
    page.select_option("[data-metric]", "median_tok_s")  # every run has 1050 tok/s: the first completed is best
    expect(page.locator("#best-run")).to_contain_text(runs[0].short_id)
    page.click("#launch-best")
    expect(page.locator("#id_param_seconds")).to_have_value(str(runs[0].params["seconds"]))
    assert f"/courses/{course.slug}/launch/{sleep_template.slug}/?from={runs[0].pk}" in page.url


@pytest.mark.timeout(120)
def test_check_on_the_sweep_form_says_what_the_sweep_takes_and_launches_nothing_then_launch_does(
    live_server, browser, alice, course, cluster, sleep_template, monkeypatch
):
    """The form disables its buttons as it is sent (data-busy): the button pressed must still reach the server."""
    monkeypatch.setattr("core.enqueue.send", lambda name, args: None)  # no worker: the sweep stays queued
    page = signed_in(browser, live_server, "alice", 1280)
    page.goto(f"{live_server.url}/courses/{course.slug}/sweep/{sleep_template.slug}/")
    page.fill("input[name=sweep_seconds]", "1, 2, 3")
    page.click("#check")
    expect(page.locator("#sweep-fit")).to_contain_text("3 run(s)")
    assert not Sweep.objects.exists()
    expect(page.locator("input[name=sweep_seconds]")).to_have_value("1, 2, 3")  # the form as the student left it
    page.click("#launch")
    expect(page.locator("#progress-done")).to_have_text("0 of 3 done")
    assert Sweep.objects.get().runs.count() == 3
