"""An instructor in Chromium, on a laptop and a phone: an ended course's page says it is read-only and offers only
what still works, and "Copy to a new term" makes the next course, refusing a slug that is taken."""

import os
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from courses.models import Course

from . import test_browser
from .test_browser import log_in

pytestmark = pytest.mark.browser
page = test_browser.page  # the Chromium fixture
SHOTS = os.environ.get("GPULAB_SCREENSHOT_DIR", "/tmp")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("width", [1280, 390])
def test_instructor_sees_the_ended_course_read_only_and_copies_it_to_a_new_term(
    page, live_server, instructor, alice, course, sleep_template, width
):
    now = timezone.now()
    Course.objects.filter(pk=course.pk).update(term_starts_at=now - timedelta(days=90), term_ends_at=now)
    page.set_viewport_size({"width": width, "height": 800})
    log_in(page, live_server, "ines")
    page.goto(f"{live_server.url}/courses/{course.slug}/")
    expect(page.locator(".term-notice")).to_contain_text("read-only")
    expect(page.locator(".term-dates")).to_contain_text("ended")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=f"{SHOTS}/gpulab-term-ended-{width}.png", full_page=True)

    page.click(f"a[href='/courses/{course.slug}/quotas/']")
    expect(page.locator(".term-notice")).to_contain_text("read-only")
    expect(page.locator("#save-quotas")).to_have_count(0)
    expect(page.locator(f"#id_max_gpus__{alice.pk}")).to_be_disabled()

    page.goto(f"{live_server.url}/courses/{course.slug}/")
    page.click("#copy-term")
    expect(page.locator("#copy-carries")).to_contain_text(sleep_template.name)
    page.fill("#id_slug", course.slug)  # taken: this course's own slug
    page.click("#copy-submit")
    expect(page.locator(".flash.error")).to_contain_text("not created")
    expect(page.locator("#copy-form")).to_contain_text("exists already")
    page.screenshot(path=f"{SHOTS}/gpulab-term-copy-error-{width}.png", full_page=True)

    page.fill("#id_name", "HPC Lab, spring")
    page.fill("#id_slug", "hpc-spring")
    starts = timezone.localtime(now + timedelta(days=10))
    page.fill("#id_term_starts_at", starts.strftime("%Y-%m-%dT%H:%M"))
    page.fill("#id_term_ends_at", (starts + timedelta(days=100)).strftime("%Y-%m-%dT%H:%M"))
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=f"{SHOTS}/gpulab-term-copy-{width}.png", full_page=True)
    page.click("#copy-submit")
    expect(page.locator(".flash.success")).to_contain_text("Created HPC Lab, spring")
    expect(page.locator("h1")).to_contain_text("HPC Lab, spring")
    expect(page.locator(".term-notice")).to_contain_text("Students can launch from")
    page.screenshot(path=f"{SHOTS}/gpulab-term-new-course-{width}.png", full_page=True)
    assert Course.objects.get(slug="hpc-spring").templates.filter(name=sleep_template.name).exists()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("width", [1280, 390])
def test_student_before_the_term_sees_when_it_opens_and_cannot_launch(
    page, live_server, alice, course, cluster, sleep_template, width
):
    starts = timezone.now() + timedelta(days=3)
    Course.objects.filter(pk=course.pk).update(term_starts_at=starts, term_ends_at=starts + timedelta(days=90))
    page.set_viewport_size({"width": width, "height": 800})
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/")
    expect(page.locator(".term-notice")).to_contain_text("opens for launches on")
    expect(page.locator(".card button.primary")).to_be_disabled()
    expect(page.locator(f"a[href='/courses/{course.slug}/launch/{sleep_template.slug}/']")).to_have_count(0)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=f"{SHOTS}/gpulab-term-catalog-{width}.png", full_page=True)
    page.goto(f"{live_server.url}/courses/{course.slug}/launch/{sleep_template.slug}/")
    expect(page.locator("#launch")).to_be_disabled()
    expect(page.locator("#launch-closed")).to_be_visible()
    page.screenshot(path=f"{SHOTS}/gpulab-term-launch-{width}.png", full_page=True)
