"""Job lists, the profile, error pages and the admin in Chromium, on a laptop and on a 390 px phone."""

from __future__ import annotations

import os
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect
from rest_framework.authtoken.models import Token

from jobs.models import Job
from jobs.states import transition

from . import made_up
from .test_browser import log_in

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("GPULAB_SHOTS", "/tmp/gpulab-shots")


def signed_in(browser, server, username: str, width: int):
    page = browser.new_context(viewport={"width": width, "height": 800}).new_page()
    log_in(page, server, username)
    return page


@pytest.fixture
def jobs(course, cluster, sleep_template, alice, bob):
    """A list as a lab leaves it: running, pending with a long reason, finished and failed jobs of two students."""
    now = timezone.now()
    rows = [
        (alice, "running", {"started_at": now - timedelta(minutes=12)}),
        (alice, "pending", {"scheduler_reason": "(QOSMaxGRESPerUser) waiting for GPUs"}),
        (alice, "completed", {"started_at": now - timedelta(hours=2), "finished_at": now}),
        (alice, "failed", {"started_at": now - timedelta(hours=3), "finished_at": now}),
        # Pending on the scheduler, not queued: a queued job is sent to SLURM by any worker this test session runs.
        (bob, "pending", {}),
    ]
    return [
        Job.objects.create(
            owner=owner,
            course=course,
            cluster=cluster,
            template=sleep_template,
            state=state,
            scheduler_id=made_up.scheduler_id(),
            **extra,
        )
        for owner, state, extra in rows
    ]


def no_sideways_scroll(page) -> None:
    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= 390, f"{page.url} is {width} px wide on a 390 px phone"


@pytest.mark.timeout(120)
def test_job_lists_fit_a_phone_and_filter_for_students_and_instructors(
    live_server, browser, jobs, alice, instructor, course
):
    for width in (390, 1280):
        page = signed_in(browser, live_server, "alice", width)
        page.goto(f"{live_server.url}/jobs/")
        expect(page.locator("#job-rows tr:has(td[data-label=Job])")).to_have_count(4)
        page.screenshot(path=f"{SHOTS}/my-jobs-{width}.png", full_page=True)
        if width == 390:
            no_sideways_scroll(page)
        page.select_option("#id_state", "failed")
        page.click(".filters button[type=submit]")
        expect(page.locator("#job-rows tr:has(td[data-label=Job])")).to_have_count(1)
        page.fill("#id_q", "no-such-job")
        page.click(".filters button[type=submit]")
        expect(page.locator("#job-rows")).to_contain_text("No jobs match these filters")

        teacher = signed_in(browser, live_server, "ines", width)
        teacher.goto(f"{live_server.url}/courses/{course.slug}/")
        expect(teacher.locator("#job-rows tr:has(td[data-label=Job])")).to_have_count(5)
        teacher.screenshot(path=f"{SHOTS}/course-jobs-{width}.png", full_page=True)
        if width == 390:
            no_sideways_scroll(teacher)
        teacher.select_option("#id_student", "bob")
        teacher.click(".filters button[type=submit]")
        expect(teacher.locator("#job-rows tr:has(td[data-label=Job])")).to_have_count(1)


@pytest.mark.timeout(120)
def test_instructor_cancels_ticked_jobs_after_confirming(live_server, browser, jobs, instructor, course):
    """Asked in the page's styled dialog, which names the ticked jobs, never in the browser's confirm()."""
    page = signed_in(browser, live_server, "ines", 1280)
    page.goto(f"{live_server.url}/courses/{course.slug}/")
    running, pending = jobs[0], jobs[1]
    asked = []
    page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#bulk-cancel button[type=submit]")
    expect(page.locator("[data-bulk-note]")).to_contain_text("Tick the jobs to cancel first")
    page.check(f"input[name=job][value='{running.pk}']")
    page.check(f"input[name=job][value='{pending.pk}']")
    dialog = page.locator("#table-cancel-dialog")
    page.click("#bulk-cancel button[type=submit]")
    expect(dialog).to_be_visible()
    expect(dialog.locator("h2")).to_have_text("Cancel 2 jobs?")
    expect(dialog.locator("li")).to_have_count(2)
    expect(dialog.locator("ul")).to_contain_text(f"{running.short_id} · alice · Sleep and echo")
    expect(dialog.locator("ul")).to_contain_text(f"{pending.short_id} · alice · Sleep and echo")
    expect(dialog.get_by_role("button", name="Keep them running")).to_be_focused()
    page.screenshot(path=f"{SHOTS}/course-jobs-cancel-dialog-1280.png", full_page=True)
    page.keyboard.press("Escape")  # keeps them
    expect(dialog).to_be_hidden()
    assert Job.objects.filter(cancel_requested_at__isnull=False).count() == 0
    page.click("#bulk-cancel button[type=submit]")
    dialog.get_by_role("button", name="Stop 2 jobs").click()
    expect(page.locator(".flash")).to_contain_text("Cancelling 2 jobs.")
    assert Job.objects.filter(pk__in=[running.pk, pending.pk], cancel_requested_at__isnull=False).count() == 2
    bobs = jobs[4]  # a row's own Cancel asks in the same dialog
    row = page.locator("#job-rows tr", has=page.locator(f"a[href='{bobs.get_absolute_url()}']"))
    row.get_by_role("button", name="Cancel").click()
    expect(dialog.locator("h2")).to_have_text(f"Cancel job {bobs.short_id} (Sleep and echo)?")
    dialog.get_by_role("button", name="Keep it running").click()
    expect(dialog).to_be_hidden()
    assert asked == []  # no browser dialog at any point
    assert Job.objects.get(pk=bobs.pk).cancel_requested_at is None
    # At once: both rows say so and offer no second cancel; the other rows keep theirs.
    for job in (running, pending):
        row = page.locator("#job-rows tr", has=page.locator(f"a[href='{job.get_absolute_url()}']"))
        expect(row.locator("td[data-label=State]")).to_have_text("Cancelling…")
        expect(row.locator("button.danger, input[name=job]")).to_have_count(0)
    page.screenshot(path=f"{SHOTS}/course-jobs-cancelling-1280.png", full_page=True)
    # The cluster stops one: its row moves on the table's own refresh, no reload.
    transition(Job.objects.get(pk=pending.pk), "cancelled", message="The scheduler reports CANCELLED.")
    row = page.locator("#job-rows tr", has=page.locator(f"a[href='{pending.get_absolute_url()}']"))
    expect(row.locator("td[data-label=State]")).to_have_text("Cancelled", timeout=12_000)


@pytest.mark.timeout(120)
def test_profile_token_is_masked_until_shown(live_server, browser, alice):
    token = Token.objects.create(user=alice)
    page = signed_in(browser, live_server, "alice", 1280)
    page.goto(f"{live_server.url}/profile/")
    expect(page.locator("#api-token")).not_to_contain_text(token.key)
    page.click("[data-token-action=show]")
    expect(page.locator("#api-token")).to_have_text(token.key)
    page.click("[data-token-action=show]")
    expect(page.locator("#api-token")).not_to_contain_text(token.key)
    page.screenshot(path=f"{SHOTS}/profile-1280.png", full_page=True)
    phone = signed_in(browser, live_server, "alice", 390)
    phone.goto(f"{live_server.url}/profile/")
    phone.screenshot(path=f"{SHOTS}/profile-390.png", full_page=True)
    no_sideways_scroll(phone)


@pytest.mark.timeout(120)
def test_error_pages_and_admin_screens(live_server, browser, alice, admin_user, cluster):
    page = signed_in(browser, live_server, "alice", 1280)
    page.goto(f"{live_server.url}/jobs/00000000-0000-0000-0000-000000000000/")
    expect(page.locator("h1")).to_have_text("Nothing here")
    page.screenshot(path=f"{SHOTS}/404-1280.png", full_page=True)
    phone = signed_in(browser, live_server, "alice", 390)
    phone.goto(f"{live_server.url}/no-such-page/")
    phone.screenshot(path=f"{SHOTS}/404-390.png", full_page=True)
    no_sideways_scroll(phone)

    admin = signed_in(browser, live_server, "ada", 1280)
    admin.goto(f"{live_server.url}/admin/")
    expect(admin.locator("#portal-nav")).to_contain_text("Operations")
    admin.screenshot(path=f"{SHOTS}/admin-index-1280.png", full_page=True)
    admin.goto(f"{live_server.url}/admin/clusters/cluster/{cluster.pk}/change/")
    admin.screenshot(path=f"{SHOTS}/admin-slurm-cluster-1280.png", full_page=True)
    admin.goto(f"{live_server.url}/admin/clusters/cluster/add/")
    # A fieldset of one kind's own fields hides when another kind is picked; one both kinds share (lab sessions) stays.
    expect(admin.locator("fieldset.kind-kubernetes:not(.kind-slurm)").first).to_be_hidden()
    expect(admin.locator("fieldset.kind-kubernetes.kind-slurm").first).to_be_visible()
    admin.select_option("#id_kind", "kubernetes")
    expect(admin.locator("fieldset.kind-slurm:not(.kind-kubernetes)").first).to_be_hidden()
    expect(admin.locator("fieldset.kind-kubernetes").first).to_be_visible()
    admin.screenshot(path=f"{SHOTS}/admin-add-kubernetes-cluster-1280.png", full_page=True)


@pytest.mark.timeout(120)
def test_the_top_navigation_names_the_course_and_folds_into_a_menu_on_a_phone(live_server, browser, instructor, course):
    Course = type(course)
    Course.objects.filter(pk=course.pk).update(name="GPU Summer School 2026 — advanced deep learning track")
    phone = signed_in(browser, live_server, "ines", 390)
    bar = phone.locator("header.topbar")
    link = bar.get_by_role("link", name="GPU Summer School 2026 — advanced deep learning track")
    expect(link).to_be_hidden()  # folded behind the menu
    assert bar.bounding_box()["height"] < 60, "the top bar takes more than one row on a phone"
    phone.screenshot(path=f"{SHOTS}/nav-closed-390.png")
    menu = bar.get_by_role("button", name="Menu")
    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(link).to_be_visible()
    expect(bar.get_by_role("link", name="My jobs")).to_be_visible()
    no_sideways_scroll(phone)
    phone.screenshot(path=f"{SHOTS}/nav-open-390.png")
    link.click()
    phone.wait_for_url(f"**/courses/{course.slug}/")

    laptop = signed_in(browser, live_server, "ines", 1280)
    expect(laptop.get_by_role("button", name="Menu")).to_be_hidden()
    expect(laptop.locator("header.topbar").get_by_role("link", name="My jobs")).to_be_visible()
    expect(laptop.locator("header.topbar .nav-course")).to_have_attribute("title", re.compile("GPU Summer School"))
    assert laptop.locator("header.topbar").bounding_box()["height"] < 60
    laptop.screenshot(path=f"{SHOTS}/nav-1280.png")


@pytest.mark.timeout(120)
def test_on_a_phone_a_long_cluster_name_sits_beside_its_label_and_the_live_gpus_students_fit(
    live_server, browser, jobs, cluster, alice, instructor, course
):
    type(cluster).objects.filter(pk=cluster.pk).update(title="Local SLURM via slurmrestd (demo)")
    page = signed_in(browser, live_server, "alice", 390)
    page.goto(f"{live_server.url}/jobs/")
    cell = page.locator("#job-rows td[data-label=Cluster]").first
    expect(cell).to_contain_text("Local SLURM via slurmrestd (demo)")
    label_top, value_top = cell.evaluate(
        """cell => {
          const range = document.createRange();
          range.selectNodeContents(cell);
          return [cell.getBoundingClientRect().top, range.getClientRects()[0].top];
        }"""
    )
    assert abs(value_top - label_top) < 8, "the cluster's name dropped below its label"
    no_sideways_scroll(page)
    page.screenshot(path=f"{SHOTS}/my-jobs-long-cluster-390.png", full_page=True)

    teacher = signed_in(browser, live_server, "ines", 390)
    teacher.goto(f"{live_server.url}/courses/{course.slug}/dashboard/")
    table = teacher.locator("#dashboard-students")
    expect(table).to_contain_text("alice")
    fits = table.evaluate("t => t.scrollWidth <= t.parentElement.clientWidth")
    assert fits, "the students table is wider than its card"
    no_sideways_scroll(teacher)
    teacher.screenshot(path=f"{SHOTS}/live-gpus-390.png", full_page=True)
