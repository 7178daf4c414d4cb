"""In Chromium, on a laptop and on a phone: an instructor books a lab session from the course page (a booking with more
GPUs than the cluster has is refused with the reason), the class dashboard counts down to the session's end with the
GPUs held, and a student sees on the launch page that a session is on."""

import os
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from courses.models import LabSession, LabSessionState

from . import test_browser
from .test_browser import log_in

pytestmark = pytest.mark.browser
page = test_browser.page  # the Chromium fixture
SHOTS = os.environ.get("GPULAB_SCREENSHOT_DIR", "/tmp")
PARTITIONS = {"gpu": {"name": "gpu", "nodes": 1, "gpus_per_node": 4, "max_minutes": 120, "default": True}}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("width", [1280, 390])
def test_instructor_books_a_session_and_the_dashboard_counts_down(
    page, live_server, instructor, alice, course, cluster, sleep_template, width
):
    cluster.lab_reservations, cluster.partition_limits = True, PARTITIONS
    cluster.save()
    page.set_viewport_size({"width": width, "height": 800})
    log_in(page, live_server, "ines")
    page.goto(f"{live_server.url}/courses/{course.slug}/")
    page.click("#lab-sessions-link")
    expect(page.locator("#lab-sessions")).to_have_count(0)
    start = timezone.localtime() + timedelta(minutes=2)
    page.fill("#id_date", start.strftime("%Y-%m-%d"))
    page.fill("#id_time", start.strftime("%H:%M"))
    page.fill("#id_minutes", "90")
    page.fill("#id_gpus", "6")
    page.click("text=Book the session")
    expect(page.locator(".errorlist")).to_contain_text("“Local SLURM” has 4 GPU(s); book at most 4.")
    page.screenshot(path=f"{SHOTS}/gpulab-lab-session-form-{width}.png", full_page=True)
    page.fill("#id_gpus", "2")
    page.click("text=Book the session")
    expect(page.locator(".flash.success")).to_contain_text("Booked.")
    expect(page.locator("#lab-sessions")).to_contain_text("Booked")
    expect(page.locator("#lab-session-notice")).to_contain_text("Next lab session")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=f"{SHOTS}/gpulab-lab-session-booked-{width}.png", full_page=True)

    # The cluster holds it (the real reservation is tests/integration/test_lab_sessions.py's): the session is on.
    session = LabSession.objects.get()
    now = timezone.now()
    LabSession.objects.filter(pk=session.pk).update(
        state=LabSessionState.HELD, gpus_held=4, nodes="vm", starts_at=now - timedelta(minutes=5)
    )
    page.goto(f"{live_server.url}/courses/{course.slug}/dashboard/")
    notice = page.locator("#lab-session-notice")
    expect(notice).to_contain_text("Lab session on now")
    expect(notice).to_contain_text("4 GPUs held for this course (2 booked; SLURM holds every GPU of vm)")
    countdown = notice.locator(".countdown")
    expect(countdown).to_contain_text(" s left")
    first = countdown.text_content()
    expect(countdown).not_to_have_text(first, timeout=3000)  # it ticks in the browser
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=f"{SHOTS}/gpulab-lab-session-dashboard-{width}.png", full_page=False)

    page.context.clear_cookies()
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/courses/{course.slug}/launch/{sleep_template.slug}/")
    expect(page.locator("#lab-session-notice")).to_contain_text("Your jobs on Local SLURM go into the course's")
    page.screenshot(path=f"{SHOTS}/gpulab-lab-session-student-{width}.png", full_page=False)
