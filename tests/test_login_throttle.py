"""Sign-in lockout (django-axes): per username and per client address, on the login page and the token endpoint."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

LOCKED = "Too many failed sign-ins for this account or from this address; try again in 15 minutes"


@pytest.fixture(autouse=True)
def _small_limit(settings):
    settings.AXES_FAILURE_LIMIT = 3
    settings.AXES_COOLOFF_TIME = 0.25  # hours: 15 minutes


def sign_in(username: str, password: str, address: str = "10.0.0.1", **headers):
    return Client(REMOTE_ADDR=address, **headers).post("/login/", {"username": username, "password": password})


def test_a_wrong_password_gives_one_message(alice):
    page = sign_in("alice", "wrong").content.decode()
    assert page.count('class="error"') == 1 and "correct username and password" in page


def test_a_username_is_locked_after_the_limit_even_with_the_right_password(alice):
    for n in range(3):
        sign_in("alice", "wrong", address=f"10.0.1.{n}")
    response = sign_in("alice", PASSWORD, address="10.0.1.99")
    page = response.content.decode()
    assert response.status_code == 429 and LOCKED in page and "ask an admin to unlock it" in page
    assert page.count('class="error"') == 1 and "_auth_user_id" not in response.client.session


def test_an_address_is_locked_after_failures_for_several_usernames(alice, bob):
    for name in ("bob", "nobody", "root"):
        sign_in(name, "wrong", address="10.0.2.1")
    assert sign_in("alice", PASSWORD, address="10.0.2.1").status_code == 429
    assert sign_in("alice", PASSWORD, address="10.0.2.2").status_code == 302  # alice herself is not locked


def test_x_forwarded_for_from_a_client_is_not_believed(alice, bob):
    """Behind no trusted proxy, a client that sends a new X-Forwarded-For each try is still one address."""
    for n, name in enumerate(("bob", "nobody", "root")):
        sign_in(name, "wrong", address="10.0.3.1", HTTP_X_FORWARDED_FOR=f"192.0.2.{n}")
    assert sign_in("alice", PASSWORD, address="10.0.3.1", HTTP_X_FORWARDED_FOR="192.0.2.77").status_code == 429


def test_an_admin_unlocks_a_username(alice, admin_user, client):
    for n in range(3):
        sign_in("alice", "wrong", address=f"10.0.4.{n}")
    assert sign_in("alice", PASSWORD, address="10.0.4.9").status_code == 429
    client.force_login(admin_user)
    assert client.get("/admin/axes/accessattempt/").status_code == 200  # where admins see and delete lockouts
    call_command("axes_reset_username", "alice")
    assert sign_in("alice", PASSWORD, address="10.0.4.9").status_code == 302


def test_students_cannot_see_the_lockouts(alice, client):
    client.force_login(alice)
    assert client.get("/admin/axes/accessattempt/").status_code == 302  # to the admin login


def test_the_token_endpoint_counts_towards_the_same_lockout(alice):
    api = Client(REMOTE_ADDR="10.0.5.1")
    for _ in range(2):
        assert api.post("/api/v1/token/", {"username": "alice", "password": "wrong"}).status_code == 400
    third = api.post("/api/v1/token/", {"username": "alice", "password": "wrong"})
    assert third.status_code == 429 and LOCKED in third.json()["detail"]
    right = Client(REMOTE_ADDR="10.0.5.2").post("/api/v1/token/", {"username": "alice", "password": PASSWORD})
    assert right.status_code == 429 and "token" not in right.json()
    assert sign_in("alice", PASSWORD, address="10.0.5.3").status_code == 429


def test_the_token_endpoint_still_hands_out_tokens(alice):
    response = Client(REMOTE_ADDR="10.0.6.1").post("/api/v1/token/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 200 and len(response.json()["token"]) == 40


LONG = "a" * 300_000


@pytest.mark.parametrize("field", ["username", "password"])
def test_an_overlong_field_at_the_token_endpoint_is_a_400_in_words_and_no_attempt_row(alice, field):
    from axes.models import AccessAttempt

    credentials = {"username": "alice", "password": "wrong", field: LONG}
    response = Client(REMOTE_ADDR="10.0.7.1").post("/api/v1/token/", credentials)
    assert response.status_code == 400
    assert f"A {field} is at most" in response.json()[field][0]
    assert not AccessAttempt.objects.exists()


@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
@pytest.mark.parametrize("field", ["username", "password"])
def test_an_overlong_field_on_a_login_page_is_a_400_in_words_and_no_attempt_row(alice, url, field):
    from axes.models import AccessAttempt

    credentials = {"username": "alice", "password": "wrong", field: LONG}
    response = Client(REMOTE_ADDR="10.0.7.2").post(url, credentials)
    assert response.status_code == 400
    assert f"A {field} is at most" in response.content.decode() and LONG not in response.content.decode()
    assert not AccessAttempt.objects.exists()


def test_a_username_of_the_longest_allowed_length_still_counts_as_a_failed_try(alice):
    from axes.models import AccessAttempt

    assert Client(REMOTE_ADDR="10.0.7.3").post("/login/", {"username": "b" * 150, "password": "x"}).status_code == 200
    assert AccessAttempt.objects.filter(username="b" * 150).count() == 1


def test_the_admin_login_still_signs_an_admin_in(admin_user):
    response = Client(REMOTE_ADDR="10.0.7.4").post("/admin/login/", {"username": "ada", "password": PASSWORD})
    assert response.status_code == 302 and "_auth_user_id" in response.client.session


def test_no_password_is_set_that_the_sign_in_would_refuse(alice):
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    from signon.credentials import PASSWORD_MAX

    validate_password("Tr0ub4dor&3-" * (PASSWORD_MAX // 12), alice)
    with pytest.raises(ValidationError, match="at most"):
        validate_password("Tr0ub4dor&3-" * (PASSWORD_MAX // 12 + 1), alice)
