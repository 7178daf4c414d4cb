"""A class's comparison in Chromium on a 390 px phone: a chart is drawn once it comes into view, the page's one legend
hides a run's lines in every chart, hovering shows every run's value, and a chart's PNG names the runs."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.test_compare import ran, url

from .test_pages_browser import no_sideways_scroll, signed_in

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("GPULAB_SHOTS", "/tmp/gpulab-shots")
RUNS = 12


@pytest.fixture
def class_runs(make_job, alice):
    """Twelve ended runs that differ in seconds, each with its loss, tok/s and GPU samples stored."""
    return [
        ran(
            make_job(alice, seconds=s),
            tok=[1000.0 + s, 1010.0 + s, 1020.0 + s],
            loss=[4.0, 3.0 - s / 10, 2.0 - s / 20],
            util=[(50 + s, 40)] * 3,
            memory=[(1000 * s, 500)] * 3,
        )
        for s in range(1, RUNS + 1)
    ]


@pytest.mark.timeout(120)
def test_a_class_comparison_draws_each_chart_in_view_and_one_legend_hides_a_run_in_all(
    live_server, browser, alice, class_runs
):
    page = signed_in(browser, live_server, "alice", 390)
    page.goto(f"{live_server.url}{url(*class_runs)}")
    expect(page.locator("#compare-legend label")).to_have_count(RUNS)
    expect(page.locator("#compare-legend label").nth(2)).to_have_text("seconds=3")
    loss, memory = page.locator("#chart-loss"), page.locator("#chart-gpu-memory")
    expect(loss.locator(".scatterlayer .trace")).to_have_count(RUNS)  # in view on open
    assert memory.locator(".main-svg").count() == 0  # far below: not drawn until it is seen
    expect(memory).to_have_attribute("data-title", "GPU memory (the run's fullest GPU)")  # what its box says till then
    no_sideways_scroll(page)
    page.screenshot(path=f"{SHOTS}/compare-class-390.png", full_page=True)

    memory.scroll_into_view_if_needed()
    expect(memory.locator(".scatterlayer .trace")).to_have_count(RUNS)
    page.locator("#compare-legend [data-run]").nth(2).uncheck()
    # Unticking may scroll the legend into view and the chart out of it: a chart out of view is drawn once it is seen.
    memory.scroll_into_view_if_needed()
    expect(memory.locator(".scatterlayer .trace")).to_have_count(RUNS - 1)
    loss.scroll_into_view_if_needed()  # drawn again with the run hidden once it is back in view
    expect(loss.locator(".scatterlayer .trace")).to_have_count(RUNS - 1)
    assert page.evaluate("document.getElementById('chart-loss').data[2].visible") is False

    plot = loss.locator(".nsewdrag").bounding_box()
    assert plot
    page.mouse.move(plot["x"] + plot["width"] * 0.5, plot["y"] + plot["height"] * 0.5)
    hover = loss.locator(".hoverlayer .legendtext")  # "x unified": every run shown, by name, at that step
    expect(hover).to_have_count(RUNS - 1)
    said = hover.all_text_contents()
    assert said[0].startswith("seconds=1") and not any(text.startswith("seconds=3") for text in said), said

    with page.expect_download() as download:
        loss.locator('.modebar-btn[data-title="Download plot as a PNG"]').click()
    assert download.value.suggested_filename == "comparison-loss.png"
    download.value.save_as(f"{SHOTS}/compare-class-loss.png")
    png = Path(download.value.path()).read_bytes()
    _, height = struct.unpack(">II", png[16:24])
    box = loss.bounding_box()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and box and height > box["height"]  # taller: Plotly's legend below

    page.click("#compare-legend [data-runs=none]")
    expect(loss.locator(".scatterlayer .trace")).to_have_count(0)
    page.click("#compare-legend [data-runs=all]")
    expect(loss.locator(".scatterlayer .trace")).to_have_count(RUNS)
