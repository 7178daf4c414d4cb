"""A lab page in Chromium on a 390 px phone: the built-in Day-2 lab fits without sideways scrolling, its code blocks
get a copy button, and hostile Markdown stays inert in a real browser."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from jobs.builtin import load_builtin_templates
from labs.builtin import load_builtin_lab, load_lab
from tests.test_labs import lab_definition

from .test_pages_browser import no_sideways_scroll, signed_in

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("GPULAB_SHOTS", "/tmp/gpulab-shots")


@pytest.mark.timeout(120)
def test_a_lab_page_fits_a_phone_copies_code_and_runs_no_script_from_markdown(
    live_server, browser, alice, course, cluster, sleep_template
):
    load_builtin_templates()
    load_builtin_lab(course, "day2-llm")
    load_lab(course, lab_definition())
    page = signed_in(browser, live_server, "alice", 390)
    page.goto(f"{live_server.url}/courses/{course.slug}/labs/day2-llm/")
    expect(page.locator(".lab-step")).to_have_count(9)
    expect(page.locator(".lab-md pre button.copy").first).to_be_visible()
    page.screenshot(path=f"{SHOTS}/lab-page-390.png", full_page=True)
    no_sideways_scroll(page)

    page.goto(f"{live_server.url}/courses/{course.slug}/labs/warm-up/")
    expect(page.locator(".lab-step").first).to_contain_text("<script>")  # shown as text
    assert page.title() != "owned" and page.locator(".lab-md img, .lab-md iframe, .lab-md script").count() == 0
    assert page.locator(".lab-md a[href^='javascript' i]").count() == 0
    no_sideways_scroll(page)
