"""In Chromium, on a laptop and on a phone: an instructor sets a course's GPU-hour budget and tops up a student from
the course page, and sees everyone's standing; the student sees their own burn-down with the 80 % notice."""

import os
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from core.choices import JobState
from courses.models import BudgetChange, Course
from jobs.launch import launch
from jobs.models import Job

from . import test_browser
from .test_browser import log_in

pytestmark = pytest.mark.browser
page = test_browser.page  # the Chromium fixture
SHOTS = os.environ.get("GPULAB_SCREENSHOT_DIR", "/tmp")


# Elements of a section wider than the screen, or that scroll sideways inside it (a table in a scrolling box).
SIDEWAYS = """(selector) => [...document.querySelectorAll(selector + ', ' + selector + ' *')].filter((e) =>
    e.getBoundingClientRect().right > window.innerWidth + 1
    || (e.scrollWidth > e.clientWidth + 1 && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX))
).map((e) => e.tagName + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : ''))"""


def ran_for(owner, course, template, cluster, hours: float, gpus: int) -> None:
    """A job of `owner` that has been running on `gpus` GPUs for `hours` (made through the launch service)."""
    job = launch(owner, course=course, template=template, cluster=cluster, raw_params={"gpus_per_node": gpus})
    started = timezone.now() - timedelta(hours=hours)
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING, started_at=started, scheduler_id=f"b{job.short_id}")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("width", [1280, 390])
def test_instructor_sets_budgets_tops_up_and_student_sees_burn_down(
    page, live_server, instructor, alice, bob, course, cluster, sleep_template, width
):
    Course.objects.filter(pk=course.pk).update(created_at=timezone.now() - timedelta(days=1))  # the jobs come after
    page.set_viewport_size({"width": width, "height": 800})
    log_in(page, live_server, "ines")
    page.goto(f"{live_server.url}/courses/{course.slug}/")
    page.click("#budgets-link")
    expect(page.locator("#no-budget")).to_be_visible()
    page.fill("#id_student_gpu_hours", "5")
    page.fill("#id_course_gpu_hours", "40")
    page.click("#save-budgets")
    expect(page.locator(".flash.success")).to_contain_text("2 setting(s) changed")
    ran_for(alice, course, sleep_template, cluster, hours=2.1, gpus=2)
    ran_for(bob, course, sleep_template, cluster, hours=0.5, gpus=1)
    page.reload()
    expect(page.locator("#student-budgets")).to_contain_text("alice")
    expect(page.locator("#course-budget")).to_contain_text("4.7 of 40 GPU-hours used")
    page.select_option("#id_topup-student", str(bob.pk))
    page.fill("#id_topup-hours", "2.5")
    page.fill("#id_topup-reason", "Final project")
    page.click("#add-top-up")
    expect(page.locator(".flash.success")).to_contain_text("Added 2.5 GPU-hour(s) to bob")
    expect(page.locator("#budget-changes")).to_contain_text("Final project")
    assert BudgetChange.objects.get(what="top_up").hours == Decimal("2.5")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for table in ("#student-budgets", "#budget-changes"):  # readable without scrolling sideways, phone included
        assert page.evaluate(SIDEWAYS, table) == [], table
    if width < 640:  # a card per student, each figure named
        cells = "[...document.querySelectorAll('#student-budgets tbody tr:first-child td')]"
        labels = f"{cells}.map((td) => getComputedStyle(td, '::before').content)"
        assert page.evaluate(labels)[1:4] == ['"Used"', '"Budget"', '"Left"']
    page.screenshot(path=f"{SHOTS}/gpulab-budgets-instructor-{width}.png", full_page=True)

    page.context.clear_cookies()
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/courses/{course.slug}/budget/")
    expect(page.locator("#my-budget")).to_contain_text("4.2 of 5 GPU-hours used")
    expect(page.locator("#my-budget .budget-notice")).to_contain_text("84 % of this budget is used")
    expect(page.locator("#my-budget polyline")).to_have_count(1)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=f"{SHOTS}/gpulab-budget-student-{width}.png", full_page=True)
