"""JupyterLab in Chromium through the portal: from the job page to the session page, a new notebook, PyTorch's
version printed in its output; the session page on a laptop and a phone; the page says when the allocation's time
limit ended the session. Real SLURM, Redis and uvicorn; screenshots in $GPULAB_SHOTS."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from clusters.choices import RunAs
from core.choices import JobState

from .notebooks import Browserless, jupyter_template, launch_notebook, new_notebook_cell, type_and_run
from .test_browser import log_in, page  # noqa: F401  (the Chromium page fixture)
from .test_cluster_identity import run_dir, students, with_identities  # noqa: F401  (the students' UNIX users)

SHOTS = os.environ.get("GPULAB_SHOTS", "/tmp")


@pytest.fixture
def lab_cluster(cluster, alice, bob, students):  # noqa: F811
    """The local cluster with sessions run as labalice, clear of clean-ups of labsvc's jobs."""
    return with_identities(cluster, RunAs.SUDO, alice, bob, students)


@pytest.mark.browser
@pytest.mark.timeout(400)
def test_student_makes_a_notebook_and_runs_torch_in_it_through_the_portal(
    worker,
    web,
    page,  # noqa: F811
    alice,
    lab_cluster,
    api_for,
    job_state,
):
    job = job_state(launch_notebook(api_for, alice, lab_cluster), JobState.RUNNING, timeout=120)
    session = Browserless(web, alice, job)
    session.wait_ready()
    assert session.get("lab/api/workspaces").json()["workspaces"]["ids"] == []  # a fresh layout: the launcher
    page.set_viewport_size({"width": 1366, "height": 900})
    console = []  # what the page said, and the kernel sockets' life, shown if the output never comes
    page.on("console", lambda message: console.append(message.text))
    page.on("websocket", lambda ws: ws.on("close", lambda w: console.append(f"socket closed: {w.url}")))
    log_in(page, web, "alice")
    page.goto(f"{web.url}/jobs/{job.pk}/")
    page.click("#open-notebook")
    expect(page.locator("#time-left")).to_contain_text("min")
    lab = page.frame_locator("#notebook-frame")
    try:
        editor = new_notebook_cell(lab)  # waits until the notebook holds its kernel (each loss seen 1 in 5 runs before)
    except AssertionError:
        page.screenshot(path=f"{SHOTS}/gpulab-jupyterlab-failed.png", full_page=True)
        raise
    output = type_and_run(page, lab, editor, "import torch; print(torch.__version__)")
    try:
        expect(output).to_contain_text("+cpu", timeout=60_000)
    except AssertionError:
        page.screenshot(path=f"{SHOTS}/gpulab-jupyterlab-failed.png", full_page=True)
        job.refresh_from_db()
        server = (run_dir(job.account.username, job) / "output.log").read_text(errors="replace")[-2500:]
        raise AssertionError(
            f"no output; the job is {job.state}; the page said {console[-15:]}; JupyterLab: {server}"
        ) from None
    assert output.inner_text().strip().startswith("2.")
    page.screenshot(path=f"{SHOTS}/gpulab-jupyterlab-laptop.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(page.locator("#open-jupyterlab")).to_be_visible()
    expect(page.locator("#notebook-frame")).to_be_hidden()
    page.screenshot(path=f"{SHOTS}/gpulab-jupyterlab-phone.png", full_page=True)


@pytest.mark.browser
@pytest.mark.timeout(400)
def test_a_session_page_opened_before_the_server_is_up_loads_jupyterlab_by_itself(
    page,  # noqa: F811
    lab_cluster,
    alice,
    api_for,
    worker,
    web,
):
    """Opened at launch, the page says what the session waits for, with the time it has taken, and JupyterLab
    appears in it once the server answers: no reload, no "not answering" in the frame."""
    page.set_viewport_size({"width": 1366, "height": 900})
    log_in(page, web, "alice")
    job = launch_notebook(api_for, alice, lab_cluster)  # queued: not on a node yet
    page.goto(f"{web.url}/jobs/{job.pk}/jupyter/")
    waiting = page.locator("#notebook-waiting")
    expect(waiting).to_contain_text(re.compile(r"Sending the session|Waiting for a GPU node|Starting JupyterLab"))
    expect(page.locator("#notebook-elapsed")).to_have_text(re.compile(r"^\d+:\d\d$"))
    expect(page.locator("#notebook-frame")).to_be_hidden()
    page.evaluate("window.gpulabSamePage = true")  # gone if the page reloads
    page.screenshot(path=f"{SHOTS}/gpulab-jupyterlab-waiting-laptop.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=f"{SHOTS}/gpulab-jupyterlab-waiting-phone.png", full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1366, "height": 900})
    lab = page.frame_locator("#notebook-frame")
    expect(lab.locator('.jp-LauncherCard[data-category="Notebook"]').first).to_be_visible(timeout=180_000)
    assert page.evaluate("window.gpulabSamePage") is True
    expect(waiting).to_have_attribute("data-phase", "ready")
    expect(page.locator("#time-left")).to_contain_text("min")  # the status card is refreshed at once
    expect(lab.locator("body")).not_to_contain_text("not answering")
    page.screenshot(path=f"{SHOTS}/gpulab-jupyterlab-attached-laptop.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    expect(page.locator("#open-jupyterlab")).to_be_visible()
    expect(waiting).to_contain_text("open it in a new tab")  # where the frame is not shown
    page.screenshot(path=f"{SHOTS}/gpulab-jupyterlab-attached-phone.png", full_page=True)


@pytest.mark.browser
@pytest.mark.timeout(400)
def test_the_session_ends_at_its_time_limit_and_the_page_says_so(
    worker,
    web,
    page,  # noqa: F811
    alice,
    lab_cluster,
    course,
    api_for,
    job_state,
):
    template = jupyter_template(course)
    minutes = next(p for p in template.parameters if p["name"] == "time_minutes")
    minutes["min"] = 1  # a one-minute session: the allocation's limit within a test's patience
    template.save()
    job = job_state(launch_notebook(api_for, alice, lab_cluster, time_minutes=1), JobState.RUNNING, timeout=120)
    log_in(page, web, "alice")
    page.goto(f"{web.url}/jobs/{job.pk}/jupyter/")
    expect(page.locator("#ending-soon")).to_contain_text("Save your notebooks")  # under ten minutes: warned at once
    page.screenshot(path=f"{SHOTS}/gpulab-jupyterlab-ending-laptop.png", full_page=True)
    expect(page.locator("#session-ended")).to_contain_text("reached its time limit", timeout=240_000)
    expect(page.locator("#notebook-waiting")).to_be_hidden()  # no "ready" left standing under the end
    expect(page.locator("#notebook-signin")).to_be_hidden()  # nor "the portal signs you in" to a server gone
    expect(page.locator("#notebook-frame")).to_be_hidden()  # nor a JupyterLab whose server is gone
    expect(page.locator("[data-socket-state]")).to_have_text("recorded")  # the charts no longer say "live"
    job.refresh_from_db()
    assert job.state == JobState.TIMED_OUT
    assert Browserless(web, alice, job).get("api/status").status_code == 410  # nothing left to proxy to
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=f"{SHOTS}/gpulab-jupyterlab-ended-phone.png", full_page=True)
