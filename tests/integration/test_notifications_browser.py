"""In Chromium: the notification settings page on a laptop and a phone, choices saved, the browser asked for
permission only when the person presses the button, and a message shown by the open page once it is allowed."""

import os

import pytest
from playwright.sync_api import expect

from notifications import notify
from notifications.events import Event
from notifications.models import Preference

from . import test_browser
from .test_browser import log_in

pytestmark = pytest.mark.browser
page = test_browser.page  # the Chromium fixture
SHOTS = os.environ.get("GPULAB_SCREENSHOT_DIR", "/tmp")

# Records what the page shows instead of drawing system notifications, which a headless browser has nowhere to put.
RECORD_NOTIFICATIONS = """
window.__shown = [];
const RealNotification = window.Notification;
window.Notification = class {
  constructor(title, options) { window.__shown.push({title, body: options.body}); }
  static get permission() { return RealNotification.permission; }
  static requestPermission() { return RealNotification.requestPermission(); }
};
"""


def fits(page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.timeout(120)
def test_settings_page_on_a_laptop_and_a_phone_saves_choices(page, live_server, instructor, course):
    log_in(page, live_server, "ines")
    page.goto(f"{live_server.url}/notifications/")
    expect(page.locator("#no-email")).to_be_visible()  # no address: said, with what to do
    expect(page.locator("#notification-prefs")).to_contain_text("Course digest")
    expect(page.locator("#allow-browser")).to_be_hidden() if page.evaluate(
        "Notification.permission"
    ) != "default" else expect(page.locator("#allow-browser")).to_be_visible()
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        page.reload()
        fits(page, width)
        page.screenshot(path=f"{SHOTS}/gpulab-notifications-{width}.png", full_page=True)
    page.uncheck("#id_failed__browser")
    page.check("#id_started__email")
    page.click("#save-prefs")
    expect(page.locator(".flash.success")).to_contain_text("Saved")
    expect(page.locator("#id_failed__browser")).not_to_be_checked()
    saved = {(p.event, p.channel): p.enabled for p in Preference.objects.filter(user=instructor)}
    assert saved[("started", "email")] and not saved[("failed", "browser")]


@pytest.mark.timeout(120)
def test_an_open_page_shows_a_browser_notification_once_allowed(page, live_server, alice):
    page.add_init_script(RECORD_NOTIFICATIONS)
    page.context.grant_permissions(["notifications"], origin=live_server.url)
    notify(alice, Event.BUDGET_80, context={"key": "w47", "text": "8 of 10 GPU-hours used this week."})
    log_in(page, live_server, "alice")  # the page after signing in asks at once
    page.wait_for_function("window.__shown.length > 0", timeout=15_000)
    assert page.evaluate("window.__shown") == [
        {"title": "GPU-hour budget 80 % used", "body": "8 of 10 GPU-hours used this week."}
    ]
    page.goto(f"{live_server.url}/notifications/")
    expect(page.locator("#browser-state")).to_have_text("This browser shows the portal's notifications.")
    expect(page.locator("#allow-browser")).to_be_hidden()
    page.wait_for_load_state("networkidle")  # its own request for messages has been answered
    assert page.evaluate("window.__shown") == []  # shown once, not on every page


@pytest.mark.timeout(120)
def test_instructor_sets_the_course_webhook_and_a_loopback_url_is_refused_on_a_phone(
    page, live_server, instructor, course
):
    log_in(page, live_server, "ines")
    page.goto(f"{live_server.url}/courses/{course.slug}/")
    page.click("#course-webhook")
    expect(page.locator("#no-webhook")).to_be_visible()
    page.fill("#id_url", "http://127.0.0.1:6379/")
    page.click("#save-webhook")
    expect(page.locator(".flash.error")).to_contain_text("loopback")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        fits(page, width)
        page.screenshot(path=f"{SHOTS}/gpulab-course-webhook-{width}.png", full_page=True)
