"""An instructor in Chromium sets one student's GPU limit from the course page, on a laptop and on a phone."""

import os

import pytest
from playwright.sync_api import expect

from courses.models import QuotaOverride

from . import test_browser
from .test_browser import log_in

pytestmark = pytest.mark.browser
page = test_browser.page  # the Chromium fixture
SHOTS = os.environ.get("GPULAB_SCREENSHOT_DIR", "/tmp")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("width", [1280, 390])
def test_instructor_sets_a_students_limit_from_the_course_page(
    page, live_server, instructor, alice, bob, course, width
):
    page.set_viewport_size({"width": width, "height": 800})
    log_in(page, live_server, "ines")
    page.goto(f"{live_server.url}/courses/{course.slug}/")
    page.click(f"a[href='/courses/{course.slug}/quotas/']")
    page.fill(f"#id_max_gpus__{alice.pk}", "8")
    page.click("#save-quotas")
    expect(page.locator(".flash.success")).to_contain_text("1 limit(s) changed")
    expect(page.locator("#quota-changes")).to_contain_text("alice")
    expect(page.locator(f"#id_max_gpus__{alice.pk}")).to_have_value("8")
    expect(page.locator(f"#id_max_gpus__{bob.pk}")).to_have_attribute("placeholder", "4")
    assert QuotaOverride.objects.get(user=alice).max_gpus == 8
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing runs off a phone's screen
    page.screenshot(path=f"{SHOTS}/gpulab-quotas-{width}.png", full_page=True)
