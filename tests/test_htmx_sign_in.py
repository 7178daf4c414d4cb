"""A panel's refresh (htmx) after the session ended takes the whole page to sign-in, back to the page it was on,
and draws no sign-in form of its own (whose CSRF cookie would void a sign-in form open in the same browser)."""

import pytest
from django.urls import reverse

from portal.htmx_sign_in import page_of

pytestmark = pytest.mark.django_db


def refresh(client, url: str, page: str):
    return client.get(url, headers={"HX-Request": "true", "HX-Current-URL": page})


def test_an_ended_sessions_panel_refresh_takes_the_page_to_sign_in_and_back(client, running_job):
    status = reverse("jobs:status", args=[running_job.pk]) + "?seen=abc"
    page = f"http://testserver{running_job.get_absolute_url()}?stream=server"
    answer = refresh(client, status, page)
    assert answer.status_code == 204 and answer.content == b""
    assert answer["HX-Redirect"] == f"/login/?next=%2Fjobs%2F{running_job.pk}%2F%3Fstream%3Dserver"
    assert "csrftoken" not in answer.cookies  # no sign-in form was drawn for it
    plain = client.get(status)  # a page load, not a panel's refresh: the sign-in page as before
    assert plain.status_code == 302 and plain["Location"].startswith("/login/?next=")


def test_a_signed_in_refresh_and_other_redirects_are_untouched(login, alice, running_job):
    client = login(alice)
    status = reverse("jobs:status", args=[running_job.pk])
    assert refresh(client, status, "http://testserver/").status_code == 200
    moved = client.get("/jobs", headers={"HX-Request": "true"})  # CommonMiddleware's slash: not sign-in
    assert moved.status_code in (301, 404) and "HX-Redirect" not in moved


@pytest.mark.parametrize(
    ("current", "page"),
    [
        ("http://testserver//evil.example/x", "/"),
        ("https://evil.example/jobs/", "/jobs/"),  # only its path is kept: the sign-in stays on this site
        ("javascript:alert(1)", "/"),
        ("http://testserver/\\evil.example", "/"),
        ("", "/"),
    ],
)
def test_the_page_to_come_back_to_is_a_local_path_whatever_the_header_says(current, page):
    assert page_of(current) == page
