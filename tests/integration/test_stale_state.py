"""With slurmctld stopped, the pages a student and an instructor watch say that the cluster has gone silent, in
place (htmx refreshes, no reload), and stop saying it once the controller answers again.

slurmctld is shared by everything on this machine: the outage is kept short (the worker polls every second, so
the notice shows within seconds) and the controller is started again in a `finally`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from .conftest import wait_for
from .jobs_api import launch
from .test_browser import log_in, page  # noqa: F401 (the Chromium page fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slurm_outage]  # it stops slurmctld
SHOTS = Path(os.environ.get("GPULAB_SCREENSHOT_DIR", "/tmp"))


def stop_slurmctld() -> None:
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, check=True).stdout
    pidfile = Path(config.split("SlurmctldPidFile")[1].split("=")[1].split()[0])
    subprocess.run(["kill", pidfile.read_text().strip()], check=True)
    wait_for(
        lambda: "DOWN" in subprocess.run(["scontrol", "ping"], capture_output=True, text=True).stdout,
        timeout=30,
        what="slurmctld to stop",
    )


@pytest.mark.timeout(300)
def test_pages_say_the_cluster_is_silent_during_a_slurmctld_outage_and_stop_once_it_answers(
    worker,
    page,  # noqa: F811
    live_server,
    alice,
    instructor,
    course,
    cluster,
    sleep_template,
    job_state,
    api_for,
):
    job = job_state(launch(api_for, alice, seconds=90), "running")
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}{job.get_absolute_url()}")
    notice = page.locator("#job-status .stale-notice")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "running")
    expect(notice).to_have_count(0)
    my_jobs = page.context.new_page()
    my_jobs.set_viewport_size({"width": 390, "height": 844})
    my_jobs.goto(f"{live_server.url}{reverse('jobs:my_jobs')}")
    row_notice = my_jobs.locator("tr.stale-row")
    expect(row_notice).to_have_count(0)
    teacher = page.context.browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    log_in(teacher, live_server, instructor.username)
    teacher.goto(f"{live_server.url}{reverse('courses:jobs', args=[course.slug])}")
    course_notice = teacher.locator("tr.stale-row")
    expect(course_notice).to_have_count(0)

    stop_slurmctld()
    try:
        expect(notice).to_contain_text(f"No answer from {cluster.display_name} for ", timeout=45_000)
        expect(notice).to_contain_text("; states may be out of date.")
        expect(page.locator("#job-state")).to_have_attribute("data-state", "running")  # kept, but not alone
        expect(row_notice).to_contain_text("states may be out of date", timeout=15_000)
        expect(course_notice).to_contain_text(f"No answer from {cluster.display_name}", timeout=15_000)
        page.screenshot(path=str(SHOTS / "stale-job-page.png"), full_page=True)
        my_jobs.screenshot(path=str(SHOTS / "stale-my-jobs-phone.png"), full_page=True)
        teacher.screenshot(path=str(SHOTS / "stale-course-page.png"), full_page=True)
    finally:
        subprocess.run(["slurmctld"], check=True)

    expect(notice).to_have_count(0, timeout=60_000)
    expect(row_notice).to_have_count(0, timeout=15_000)
    expect(course_notice).to_have_count(0, timeout=15_000)
