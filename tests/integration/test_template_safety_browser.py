"""An instructor in Chromium cannot publish a template that puts a student's value where bash would run it,
and is told the line, the reason and the fix; the admin's cluster page states what a shared account isolates."""

import os

import pytest
from playwright.sync_api import expect

from jobs.models import JobTemplate

from .test_browser import log_in, page  # noqa: F401  (the Chromium fixture)

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("GPULAB_SCREENSHOT_DIR", "/tmp")
PARAMS = [{"name": "epochs", "type": "int", "label": "Epochs", "default": 1, "min": 1, "max": 5}]


@pytest.mark.timeout(120)
def test_instructor_cannot_publish_a_refused_placement_and_is_told_the_fix(page, live_server, instructor, course):  # noqa: F811
    log_in(page, live_server, "ines")
    page.goto(f"{live_server.url}/courses/{course.slug}/templates/new/")
    page.fill("#id_name", "Arithmetic")
    page.fill("#id_slug", "arith")
    page.fill("#id_body", "echo start\n(( total = {{ epochs }} * 2 ))\necho $total\n")
    page.fill("#id_params-0-name", "epochs")  # the blank parameter row
    page.select_option("#id_params-0-type", "int")
    page.fill("#id_params-0-label", "Epochs")
    page.fill("#id_params-0-default", "1")
    page.fill("#id_params-0-min", "1")
    page.fill("#id_params-0-max", "5")
    page.get_by_role("button", name="Save draft").click()
    preview = page.locator("#preview")
    expect(preview).to_contain_text("Line 2: {{ epochs }} is inside (( )) arithmetic", timeout=15_000)
    expect(preview).to_contain_text('"$GPULAB_P_epochs"')
    assert JobTemplate.objects.get(slug="arith").parameters == PARAMS
    page.click("#publish")
    body_field = page.locator(".field", has=page.locator("#id_body"))
    expect(body_field).to_contain_text("Line 2: {{ epochs }} is inside (( )) arithmetic")
    page.screenshot(path=f"{SHOTS}/gpulab-template-refused.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=f"{SHOTS}/gpulab-template-refused-phone.png", full_page=True)
    assert JobTemplate.objects.get(slug="arith").status == "draft"

    page.set_viewport_size({"width": 1280, "height": 720})
    page.fill("#id_body", 'echo start\nseq 1 {{ epochs }}\necho "epochs: $GPULAB_P_epochs"\n')
    page.click("#publish")  # publishes what is in the form, in one step
    expect(page.locator("body")).to_contain_text("Published")
    assert JobTemplate.objects.get(slug="arith").status == "published"


@pytest.mark.timeout(120)
def test_admin_cluster_page_says_a_shared_account_isolates_nobody(page, live_server, admin_user, cluster):  # noqa: F811
    log_in(page, live_server, "ada")
    page.goto(f"{live_server.url}/admin/clusters/cluster/{cluster.pk}/change/")
    notice = page.locator("#isolation-notice")
    expect(notice).to_contain_text("Isolation between students.")
    expect(notice).to_contain_text("give each their own identity")
    page.screenshot(path=f"{SHOTS}/gpulab-cluster-isolation.png")
    page.set_viewport_size({"width": 390, "height": 844})
    expect(notice).to_be_visible()
    page.screenshot(path=f"{SHOTS}/gpulab-cluster-isolation-phone.png", full_page=True)
