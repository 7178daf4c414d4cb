"""In Chromium: an instructor imports a roster, the new student follows the invitation mail's link, sets a password,
logs in and launches a job; the reset pages on a laptop and a phone. Mail goes through the real Celery worker to
the session's SMTP server."""

import os
import uuid
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from courses.models import Enrollment, Invitation
from tests.smtp import body, link_in

from . import test_browser
from .test_browser import log_in

pytestmark = pytest.mark.browser
page = test_browser.page  # the Chromium fixture
SHOTS = os.environ.get("GPULAB_SCREENSHOT_DIR", "/tmp")
NEW_PASSWORD = "amber-kettle-52-river"


def fits(page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing runs off a phone's screen


@pytest.mark.timeout(300)
def test_imported_student_follows_the_invitation_sets_a_password_and_launches(
    worker, page, live_server, smtp_server, instructor, alice, course, cluster, sleep_template, tmp_path
):
    smtp_server.inbox.clear()
    roster = tmp_path / "roster.csv"
    roster.write_text("username,email,role\nzoe,zoe@example.edu,student\nalice,alice@example.edu,student\n")
    log_in(page, live_server, "ines")
    page.goto(f"{live_server.url}/courses/{course.slug}/roster/")
    page.set_input_files("#id_roster", str(roster))
    page.click("#import-roster")  # the preview: nothing is saved yet
    expect(page.locator("#roster-plan")).to_contain_text("new account, invited at zoe@example.edu")
    expect(page.locator("#roster-plan")).to_contain_text("already enrolled: nothing changes")
    assert not Enrollment.objects.filter(user__username="zoe").exists()
    page.set_viewport_size({"width": 390, "height": 800})
    fits(page, 390)
    page.screenshot(path=f"{SHOTS}/gpulab-roster-preview-390.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.click("#confirm-import")
    expect(page.locator(".flash.success")).to_contain_text("1 invitation to set a password queued")
    expect(page.locator("#not-signed-in")).to_contain_text("zoe")

    [mail] = smtp_server.inbox.wait_for("zoe@example.edu", timeout=60)  # sent by the worker
    assert "Your username: zoe" in body(mail)
    assert smtp_server.inbox.messages("alice@example.edu") == []  # an existing account is not invited
    expect(page.locator("#person-zoe")).to_contain_text("invited")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        page.reload()
        fits(page, width)
        page.screenshot(path=f"{SHOTS}/gpulab-roster-{width}.png", full_page=True)

    link = link_in(mail)
    assert link.startswith("http://localhost:8000/password/set/")  # PORTAL_URL; the test server listens elsewhere
    page.context.clear_cookies()
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(live_server.url + urlsplit(link).path)
    expect(page.locator("#set-password h1")).to_have_text("Choose your password")
    assert "/set-password/" in page.url  # the token left the address bar
    fits(page, 390)
    page.screenshot(path=f"{SHOTS}/gpulab-set-password-390.png", full_page=True)
    page.fill("#id_new_password1", NEW_PASSWORD)
    page.fill("#id_new_password2", NEW_PASSWORD)
    page.click("#save-password")
    expect(page.locator(".flash.success")).to_have_text("Your password is set. Log in as zoe.")

    page.set_viewport_size({"width": 1280, "height": 720})
    page.fill("#id_username", "zoe")
    page.fill("#id_password", NEW_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url, timeout=15_000)
    page.click(f"a[href='/courses/{course.slug}/launch/{sleep_template.slug}/']")
    page.fill("#id_param_seconds", "2")
    page.fill("#id_param_message", "invited-and-running")
    page.click("#launch")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "completed", timeout=90_000)
    expect(page.locator("#log")).to_contain_text("invited-and-running", timeout=30_000)

    assert Invitation.objects.get(user__username="zoe").sent_at is not None
    page.goto(live_server.url + urlsplit(link).path)  # the same link again
    expect(page.locator("#link-invalid")).to_be_visible()
    page.screenshot(path=f"{SHOTS}/gpulab-set-password-used-1280.png", full_page=True)
    assert Enrollment.objects.get(user__username="zoe").user.last_login is not None


@pytest.mark.timeout(120)
@pytest.mark.parametrize("width", [1280, 390])
def test_reset_pages_on_a_laptop_and_a_phone(page, live_server, width):
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(f"{live_server.url}/login/")
    page.click("#forgot-password")
    expect(page.locator("#reset-request h1")).to_have_text("Forgot your password?")
    fits(page, width)
    page.screenshot(path=f"{SHOTS}/gpulab-reset-request-{width}.png", full_page=True)
    page.fill("#id_email", f"nobody-{uuid.uuid4().hex[:8]}@example.edu")  # counters last an hour
    page.click("#send-reset")
    expect(page.locator("#reset-sent h1")).to_have_text("Check your mail")
    fits(page, width)
    page.screenshot(path=f"{SHOTS}/gpulab-reset-sent-{width}.png", full_page=True)


@pytest.mark.timeout(120)
def test_instructor_changes_a_role_and_removes_a_student_on_a_phone(page, live_server, instructor, alice, bob, course):
    page.set_viewport_size({"width": 390, "height": 800})
    log_in(page, live_server, "ines")
    page.goto(f"{live_server.url}/courses/{course.slug}/roster/")
    page.select_option(f"#role-{alice.pk}", "ta")
    page.locator("#person-alice").get_by_role("button", name="Change").click()
    expect(page.locator(".flash.success")).to_have_text("alice is now teaching assistant of HPC Lab.")
    page.locator("#person-bob").get_by_role("link", name="Remove…").click()
    expect(page.locator("#remove-person")).to_contain_text(
        "Their account stays, with their other courses. They have no jobs here."
    )
    fits(page, 390)
    page.screenshot(path=f"{SHOTS}/gpulab-roster-remove-390.png", full_page=True)
    page.click("#confirm-remove")
    expect(page.locator(".flash.success")).to_have_text("bob was removed from HPC Lab.")
    expect(page.locator("#person-bob")).to_have_count(0)
    expect(page.locator("#roster-changes")).to_contain_text("Removed bob")
    expect(page.locator("#roster-changes")).to_contain_text("Role changed alice")
    page.screenshot(path=f"{SHOTS}/gpulab-roster-after-390.png", full_page=True)
    fits(page, 390)
    assert Enrollment.objects.get(user=alice).role == "ta"
    page.screenshot(path=f"{SHOTS}/gpulab-roster-after-390.png", full_page=True)
