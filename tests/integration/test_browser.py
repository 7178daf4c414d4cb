"""A student in Chromium: log in, launch from the form, watch the state change and the log grow."""

import os
import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from telemetry.models import Node
from tests.conftest import PASSWORD

pytestmark = pytest.mark.browser


@pytest.fixture
def page(live_server, chromium):
    """A laptop-sized page in a fresh context of the process's Chromium."""
    return chromium.new_context(viewport={"width": 1280, "height": 720}).new_page()


def log_in(page, live_server, username: str) -> None:
    # A page left open on the portal sends itself to the login page once its cookies are gone (its pollers are
    # answered with the login's address); leaving it first keeps that navigation from interrupting this one.
    page.goto("about:blank")
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    # The session cookie exists only once the POST's answer is back; navigating earlier lands on the login page.
    page.wait_for_url(lambda url: "/login/" not in url, timeout=15_000)


@pytest.mark.timeout(180)
def test_student_launches_from_the_form_and_watches_the_job(
    worker, page, live_server, alice, cluster, sleep_template, course
):
    log_in(page, live_server, "alice")
    page.click(f"a[href='/courses/{course.slug}/launch/{sleep_template.slug}/']")
    page.fill("#id_param_seconds", "6")
    page.fill("#id_param_message", "chromium-says-hi")
    page.click("#launch")

    state = page.locator("#job-state")
    expect(state).to_have_attribute("data-state", "running", timeout=60_000)
    expect(page.locator("#log")).to_contain_text("start on", timeout=30_000)
    expect(state).to_have_attribute("data-state", "completed", timeout=60_000)
    expect(page.locator("#log")).to_contain_text("chromium-says-hi", timeout=30_000)
    expect(page.locator("#log")).to_contain_text("done", timeout=30_000)
    expect(page.locator("#log-status")).to_have_text("End of log.", timeout=30_000)
    expect(page.locator("#job-timeline")).to_contain_text("Completed")  # the timeline follows without a reload
    page.screenshot(path=os.environ.get("GPULAB_SCREENSHOT", "/tmp/gpulab-job-page.png"), full_page=True)


@pytest.mark.timeout(240)
def test_student_tries_a_kubernetes_server_from_its_page(
    worker, page, live_server, alice, course, k8s_cluster, k8s_templates, kube, tinylm_server
):
    from .conftest import wait_for

    log_in(page, live_server, "alice")
    page.click(f"a[href='/courses/{course.slug}/launch/k8s-tinylm-server/']")
    page.fill("#id_param_gpus", "0")
    page.click("#launch")
    job = wait_for(lambda: Job.objects.filter(state="pending").first(), what="the server to be submitted")
    namespace = job.scheduler_id.split("/")[0]
    deployment = kube.items(f"/apis/apps/v1/namespaces/{namespace}/deployments", f"gpulab.io/job={job.pk}")[0]
    service = kube.items(f"/api/v1/namespaces/{namespace}/services", f"gpulab.io/job={job.pk}")[0]
    kube.route_service(namespace, service["metadata"]["name"], tinylm_server)
    kube.start_pod(deployment, "browser-1", phase="Running", ready=True)

    expect(page.locator("#job-state")).to_have_attribute("data-state", "running", timeout=60_000)
    page.reload()  # the Try it box opens on a running server's page
    expect(page.locator("#port-forward")).to_contain_text("port-forward service/")
    page.fill("#try-it textarea", "And God said")
    page.click("#send-prompt")
    expect(page.locator("#answer")).to_have_attribute("data-done", "1", timeout=60_000)
    assert page.locator("#answer").inner_text().strip()
    expect(page.locator("#answer")).not_to_have_class("error")
    expect(page.locator("#send-prompt")).to_be_enabled()
    page.screenshot(path=os.environ.get("GPULAB_K8S_SCREENSHOT", "/tmp/gpulab-k8s-job-page.png"), full_page=True)


@pytest.mark.timeout(180)
def test_student_watches_live_gpu_charts_grow_and_instructor_sees_the_class(
    worker, collector, web, page, alice, instructor, admin_user, course, cluster, sleep_template, api_for, job_state
):
    response = api_for(alice).post(
        "/api/v1/jobs/",
        {"template": "sleep-echo", "cluster": "local", "params": {"gpus_per_node": 2, "seconds": 120}},
        format="json",
    )
    job = job_state(Job.objects.get(pk=response.json()["id"]), "running")
    log_in(page, web, "alice")
    page.goto(f"{web.url}/jobs/{job.pk}/")
    chart = page.locator("[data-chart=gpu-util]")
    expect(page.locator("[data-socket-state]")).to_have_text("live", timeout=20_000)
    expect(chart).to_have_attribute("data-points", re.compile(r"^\d+$"), timeout=20_000)
    first = int(chart.get_attribute("data-points"))
    # Points are appended (extendTraces), one per GPU per second: the count keeps growing on the same figure (while
    # it is on screen: a chart out of view keeps its points until it is shown).
    chart.scroll_into_view_if_needed()
    expect(chart).not_to_have_attribute("data-points", str(first), timeout=10_000)
    assert page.evaluate("document.querySelector('[data-chart=gpu-util]').data.length") == 2  # the job's 2 GPUs
    assert page.evaluate("document.querySelector('[data-chart=gpu-util]').data[0].x.length") >= 2
    expect(page.locator("#log")).to_contain_text("start on", timeout=20_000)
    # The local node's nvidia-smi is the demo's stand-in: every GPU chart says its figures are simulated.
    expect_simulated_gpu_charts(page)

    page.context.clear_cookies()
    log_in(page, web, "ines")
    page.goto(f"{web.url}/courses/{course.slug}/dashboard/")
    heatmap = page.locator("[data-chart=heatmap]")
    expect(heatmap).to_have_attribute("data-frames", re.compile(r"^[1-9]\d*$"), timeout=20_000)
    expect(heatmap).to_have_attribute("data-rows", "1", timeout=10_000)  # alice, her two GPUs in one row
    rows = page.locator("[data-chart=heatmap] .heat-label").all_text_contents()
    assert rows == ["▸ alice · 2 GPUs"]  # one row per student, their GPUs averaged
    hover = page.evaluate(
        "(() => { const h = document.querySelector('[data-chart=heatmap]').heatmap;"
        " return h.times.map((_, column) => h.cellText(0, column)); })()"
    )
    assert any(f"alice · sleep-echo {str(job.pk)[:8]} · mean GPU util of 2 GPUs" in cell for cell in hover)
    expect(page.locator("[data-heatmap-simulated]")).to_be_visible()

    page.context.clear_cookies()
    log_in(page, web, "ada")
    page.goto(f"{web.url}/nodes/{Node.objects.get(cluster=cluster).pk}/")
    expect(page.locator("[data-chart=gpu-util]")).to_have_attribute("data-points", re.compile(r"^\d+$"), timeout=20_000)
    expect_simulated_gpu_charts(page)


def expect_simulated_gpu_charts(page) -> None:
    """Each GPU chart's caption, and the notes above the charts, say that the figures are simulated; the host's
    charts (CPU, memory, disk: measured) do not."""
    gpu_captions = page.locator("figure[data-chart-box^='gpu-'] [data-chart-simulated]")
    assert gpu_captions.count() >= 2
    for caption in gpu_captions.all():
        expect(caption).to_be_visible()
        expect(caption).to_have_text("simulated, not measured")
    expect(page.locator("figure:not([data-chart-box^='gpu-']) [data-chart-simulated]")).to_have_count(0)
    expect(page.locator("[data-telemetry-notes]")).to_contain_text("Simulated GPUs: this cluster's nvidia-smi")
    if page.locator("[data-hints]").count():  # a job's page: the checklist's suggestions read the same figures
        expect(page.locator("[data-hints-simulated]")).to_be_visible()
