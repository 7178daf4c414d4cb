"""A job page left open when the session ends (signed out in another tab, or expired) goes to sign-in by itself on
its next state refresh, and back to the job once signed in: it does not stay up saying a state it no longer hears."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from jobs.models import Job

from . import test_browser
from .test_browser import PASSWORD, log_in

page = test_browser.page  # the Chromium fixture


def test_a_job_page_whose_session_ended_goes_to_sign_in_and_back(page, live_server, cluster, running_job):
    # Running as far as the portal knows, with no scheduler id for a worker of this process to poll and end.
    Job.objects.filter(pk=running_job.pk).update(scheduler_id="")
    log_in(page, live_server, "alice")
    job_url = f"{live_server.url}{running_job.get_absolute_url()}"
    page.goto(job_url)
    expect(page.locator("#job-state")).to_have_attribute("data-state", "running")
    page.context.clear_cookies()  # the session is gone
    page.wait_for_url(re.compile(r"/login/\?next=%2Fjobs%2F"), timeout=15_000)  # the next refresh, 3 s at most
    assert page.url.endswith(f"/login/?next=%2Fjobs%2F{running_job.pk}%2F")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(job_url)
    expect(page.locator("#job-state")).to_have_attribute("data-state", "running")
