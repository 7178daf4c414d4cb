"""In Chromium, on a laptop and a phone: a student's idle job shows the course's idle warning, and "Keep it"
withdraws it."""

import os
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from core.choices import JobState
from courses.models import Course
from jobs.launch import launch
from jobs.models import IdleWarning, Job
from telemetry import idle_reaping
from telemetry.models import SeriesChunk

from . import test_browser
from .test_browser import log_in

pytestmark = pytest.mark.browser
page = test_browser.page  # the Chromium fixture
SHOTS = os.environ.get("GPULAB_SCREENSHOT_DIR", "/tmp")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("width", [1280, 390])
def test_student_sees_the_idle_warning_and_keeps_the_job(
    page, live_server, alice, course, cluster, sleep_template, width
):
    Course.objects.filter(pk=course.pk).update(idle_util_below=10, idle_warn_minutes=5, idle_cancel_minutes=10)
    job = launch(alice, course=course, template=sleep_template, cluster=cluster, raw_params={"gpus_per_node": 1})
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        state=JobState.RUNNING, started_at=now - timedelta(minutes=20), scheduler_id=f"w{job.short_id}"
    )
    xs = [int((now - timedelta(seconds=10 * i)).timestamp() * 1000) for i in range(36, 0, -1)]
    series = {"gpu-util": {"vm/3": {"name": "GPU 3", "x": xs, "y": [1.0] * len(xs)}}}
    SeriesChunk.objects.create(job=job, start=now - timedelta(minutes=6), end=now, series=series)
    assert idle_reaping.run(now).warned == [str(job.pk)]
    page.set_viewport_size({"width": width, "height": 800})
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}{job.get_absolute_url()}")
    expect(page.locator("#idle-warning")).to_contain_text("below 10 % for 6 minutes")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=f"{SHOTS}/gpulab-idle-warning-{width}.png")
    page.click("#keep-job")
    expect(page.locator(".flash.success")).to_contain_text("the idle clock starts again")
    expect(page.locator("#idle-warning")).to_have_count(0)
    assert not IdleWarning.objects.get(job=job).active
