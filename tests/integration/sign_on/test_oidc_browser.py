"""A student in Chromium: the campus button, the provider's sign-in and consent pages, and back to the portal."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from courses.models import Enrollment
from signon.models import CourseGroup, Source
from tests.sign_on import PEOPLE_PASSWORD

SHOTS = os.environ.get("GPULAB_SCREENSHOTS", "/tmp")
pytestmark = pytest.mark.browser


def portal_url(live_server) -> str:
    # The provider accepts the client's loopback redirect on any port, by address (RFC 8252), not by name.
    return live_server.url.replace("localhost", "127.0.0.1")


@pytest.mark.timeout(120)
def test_student_signs_in_through_the_campus_provider_and_lands_enrolled(chromium, live_server, oidc_on, course):
    CourseGroup.objects.create(course=course, source=Source.OIDC, group="hpc-students")
    base = portal_url(live_server)
    page = chromium.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(f"{base}/login/")
    page.screenshot(path=f"{SHOTS}/sso-login-1280.png", full_page=True)
    page.click("#campus-sign-in")
    expect(page.locator("h1")).to_contain_text("Campus sign-in")  # the provider's own page
    page.fill("#login", "lena")
    page.fill("#password", PEOPLE_PASSWORD)
    page.click("#sign-in")
    page.click("#allow")  # consent
    page.wait_for_url(f"{base}/", timeout=15_000)
    expect(page.locator(".who")).to_contain_text("lena")
    expect(page.locator("nav")).to_contain_text("My jobs")
    page.screenshot(path=f"{SHOTS}/sso-signed-in-1280.png", full_page=True)
    assert Enrollment.objects.filter(course=course, user__username="lena").exists()

    page.click(".who button")  # Log out: at the provider too, which asks to confirm
    page.wait_for_url(lambda url: "/session/end" in url, timeout=15_000)
    page.locator("button[autofocus], button").first.click()
    page.wait_for_url(f"{base}/login/", timeout=15_000)
    expect(page.locator("#campus-sign-in")).to_be_visible()


def test_login_page_on_a_phone_puts_the_campus_button_first(chromium, live_server, oidc_on):
    page = chromium.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2).new_page()
    page.goto(f"{portal_url(live_server)}/login/")
    button = page.locator("#campus-sign-in").bounding_box()
    password = page.locator("#id_password").bounding_box()
    assert button["y"] < password["y"]
    assert button["width"] > 300  # the whole width of a phone
    page.screenshot(path=f"{SHOTS}/sso-login-390.png", full_page=True)
    page.goto(f"{portal_url(live_server)}/oidc/callback/?code=stolen&state=forged")  # a link not started here
    expect(page.locator(".flash")).to_contain_text("Signing in through the campus did not work")
    expect(page.locator("#campus-sign-in")).to_be_visible()
    page.screenshot(path=f"{SHOTS}/sso-login-failed-390.png", full_page=True)


def test_roster_page_names_the_campus_groups_on_a_laptop_and_a_phone(chromium, live_server, instructor, course):
    from tests.conftest import PASSWORD

    CourseGroup.objects.create(course=course, source=Source.LDAP, group="hpc-students")
    CourseGroup.objects.create(course=course, source=Source.OIDC, group="hpc-staff", role="ta")
    for width, height in ((1280, 800), (390, 844)):
        page = chromium.new_context(viewport={"width": width, "height": height}).new_page()
        page.goto(f"{portal_url(live_server)}/login/")
        page.fill("#id_username", instructor.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/login/" not in url, timeout=15_000)
        page.goto(f"{portal_url(live_server)}/courses/{course.slug}/roster/")
        expect(page.locator("#campus-groups")).to_contain_text("hpc-students")
        page.screenshot(path=f"{SHOTS}/sso-roster-groups-{width}.png", full_page=True)
