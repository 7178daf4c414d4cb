"""The student's account/key page and the admin's cluster page in Chromium, on a laptop and on a 390 px phone."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from clusters.choices import RunAs
from clusters.identity import set_cluster_username
from clusters.models import ClusterAccount

from .test_pages_browser import SHOTS, no_sideways_scroll, signed_in

pytestmark = pytest.mark.browser


@pytest.mark.timeout(120)
def test_student_gets_a_generated_key_and_copies_its_public_half(live_server, browser, alice, cluster):
    set_cluster_username(alice, "alice01")
    page = signed_in(browser, live_server, "alice", 1280)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{live_server.url}/profile/")
    expect(page.locator("#cluster-username")).to_have_text("alice01")
    page.fill("#id_username", "alicehpc")
    page.click("button:has-text('Register')")
    account = ClusterAccount.objects.get(user=alice)
    expect(page.locator("[data-copy-source]")).to_have_text(account.public_key)
    expect(page.locator("body")).not_to_contain_text("PRIVATE KEY")
    page.click("[data-copy]")
    expect(page.locator("[data-copy-status]")).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == account.public_key
    page.screenshot(path=f"{SHOTS}/profile-key-1280.png", full_page=True)
    phone = signed_in(browser, live_server, "alice", 390)
    phone.goto(f"{live_server.url}/profile/")
    phone.screenshot(path=f"{SHOTS}/profile-key-390.png", full_page=True)
    no_sideways_scroll(phone)


@pytest.mark.timeout(120)
def test_admin_picks_how_jobs_run_and_reads_whether_students_are_isolated(
    live_server,
    browser,
    admin_user,
    cluster,
    services,
):
    admin = signed_in(browser, live_server, "ada", 1280)
    url = f"{live_server.url}/admin/clusters/cluster/{cluster.pk}/change/"
    admin.goto(url)
    expect(admin.locator("#isolation-notice")).to_contain_text("can read, change and delete")
    options = admin.locator("#id_run_as option").all_inner_texts()
    assert len(options) == 3 and not any("slurmrestd" in o for o in options)  # only what the slurm kind supports
    admin.select_option("#id_run_as", RunAs.SUDO)
    admin.click("input[name=_continue]")
    expect(admin.locator("#isolation-notice")).to_contain_text("Run directories are private to their owner")
    admin.screenshot(path=f"{SHOTS}/admin-cluster-run-as-1280.png", full_page=True)
    admin.click("text=Test connection")
    expect(admin.locator("#report-verdict")).to_have_text("Login works")
    expect(admin.locator("body")).to_contain_text("sudo rule of labsvc: only the portal's commands")
    admin.screenshot(path=f"{SHOTS}/admin-test-connection-sudo-1280.png", full_page=True)
    phone = signed_in(browser, live_server, "ada", 390)
    phone.goto(url)
    phone.screenshot(path=f"{SHOTS}/admin-cluster-run-as-390.png", full_page=True)

    account = cluster.service_account()  # an account whose sudo rule allows every command (as a decoy user)
    account.username = services["GPULAB_PERSONAL_USER"]
    account.set_secret(Path(services["GPULAB_PERSONAL_KEY"]).read_text())
    account.save()
    admin.goto(f"{live_server.url}/admin/clusters/cluster/{cluster.pk}/test-connection/")
    expect(admin.locator("#report-verdict")).to_have_text("Login works; the sudo rule must change")
    expect(admin.locator("body")).to_contain_text("TOO BROAD: ALL: every command (ALL)")
    admin.screenshot(path=f"{SHOTS}/admin-test-connection-too-broad-1280.png", full_page=True)
