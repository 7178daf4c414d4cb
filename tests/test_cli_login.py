"""Signing `gpulab` in through the browser (signon/cli_login.py): the API's start and poll, and the page where the
signed-in user types the code and confirms. The client itself against a live portal: tests/integration/test_cli.py."""

import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from signon.cli_views import WRONG_CODES_ALLOWED
from signon.models import CliLogin


@pytest.fixture(autouse=True)
def _no_wrong_codes_left_from_earlier_tests():
    from django.core.cache import cache

    cache.clear()


def start(client="gpulab on pc-7") -> dict:
    answer = APIClient().post("/api/v1/token/code/", {"client": client}, format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()


def poll(device_code: str, *, waited: bool = True):
    """The client's poll; `waited`: as after the interval it is asked to keep (the pace the portal holds it to)."""
    if waited:
        from django.core.cache import cache

        cache.delete("gpulab:cli-login:poll:" + hashlib.sha256(device_code.encode()).hexdigest())
    return APIClient().post("/api/v1/token/code/poll/", {"device_code": device_code}, format="json")


def test_a_code_typed_and_confirmed_hands_the_user_s_token_to_the_client_once(login, alice):
    started = start()
    assert started["verification_url"] == "http://testserver/cli/login/" and started["interval"] == 2
    assert len(started["user_code"]) == 9 and started["user_code"][4] == "-"
    stored = CliLogin.objects.get()
    assert started["device_code"] not in (stored.device_hash, stored.user_code)  # only its hash is kept
    assert poll(started["device_code"]).status_code == 202

    page = login(alice)
    typed = page.post("/cli/login/", {"code": started["user_code"].lower().replace("-", " ")})
    assert typed.status_code == 200
    assert b"gpulab on pc-7" in typed.content and b'id="cli-confirm"' in typed.content
    assert b"ago from 127.0.0.1." in typed.content and b"cli-elsewhere" not in typed.content
    assert poll(started["device_code"]).status_code == 202  # typing the code is not confirming it
    done = page.post("/cli/login/", {"code": started["user_code"], "action": "confirm"})
    assert b"Client signed in" in done.content

    answer = poll(started["device_code"])
    assert answer.status_code == 200
    assert answer.json() == {"token": Token.objects.get(user=alice).key, "username": "alice"}
    again = poll(started["device_code"])
    assert again.status_code == 410 and "already used" in again.json()["detail"]
    assert not CliLogin.objects.exists()


def test_a_refused_code_ends_the_client_s_wait_in_words_and_gives_no_token(login, alice):
    started = start()
    page = login(alice)
    refused = page.post("/cli/login/", {"code": started["user_code"], "action": "refuse"})
    assert b"Sign-in refused" in refused.content
    answer = poll(started["device_code"])
    assert answer.status_code == 410 and answer.json()["detail"] == "The sign-in was refused in the browser."
    assert not Token.objects.filter(user=alice).exists()
    # The refused code is no longer waiting: confirming it afterwards signs nothing in.
    late = page.post("/cli/login/", {"code": started["user_code"], "action": "confirm"})
    assert late.status_code == 400 and b"No sign-in is waiting with the code" in late.content


def test_an_expired_code_cannot_be_confirmed_and_the_client_is_told_to_start_again(login, alice):
    started = start()
    CliLogin.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    answer = login(alice).post("/cli/login/", {"code": started["user_code"], "action": "confirm"})
    assert answer.status_code == 400
    gone = poll(started["device_code"])
    assert gone.status_code == 410 and "expired" in gone.json()["detail"]


def test_the_page_never_takes_the_code_from_a_link_and_asks_anonymous_visitors_to_sign_in(client, login, alice):
    started = start()
    anonymous = client.get(f"/cli/login/?code={started['user_code']}")
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")
    page = login(alice).get(f"/cli/login/?code={started['user_code']}")
    assert page.status_code == 200 and started["user_code"].encode() not in page.content
    assert b"Do not type it" in page.content


def test_wrong_codes_are_counted_per_user_and_stop_after_the_allowance(login, alice, bob):
    page = login(alice)
    for _ in range(WRONG_CODES_ALLOWED):
        assert page.post("/cli/login/", {"code": "AAAA-AAAA"}).status_code == 400
    started = start()
    blocked = page.post("/cli/login/", {"code": started["user_code"], "action": "confirm"})
    assert blocked.status_code == 429 and b"Too many wrong codes" in blocked.content
    assert poll(started["device_code"]).status_code == 202  # nothing was confirmed


def test_start_and_poll_refuse_bad_bodies_in_words(db):
    assert APIClient().post("/api/v1/token/code/", {}, format="json").json() == {"client": ["This field is required."]}
    assert APIClient().post("/api/v1/token/code/", {"client": "x" * 101}, format="json").status_code == 400
    unknown = poll("not-a-code")
    assert unknown.status_code == 410 and "unknown or was already used" in unknown.json()["detail"]


def test_a_confirmed_code_not_collected_within_its_ten_minutes_gives_no_token(login, alice):
    started = start()
    login(alice).post("/cli/login/", {"code": started["user_code"], "action": "confirm"})
    CliLogin.objects.update(expires_at=timezone.now() - timedelta(days=3))
    late = poll(started["device_code"])
    assert late.status_code == 410 and "expired" in late.json()["detail"]
    assert not Token.objects.filter(user=alice).exists()


def test_a_client_name_with_line_breaks_or_invisible_characters_is_refused(db):
    for hostile in ("gpulab\nCampus IT: press Sign it in", "gpulab on pc\u202eni ngis", "a\x1b[2Jb"):
        answer = APIClient().post("/api/v1/token/code/", {"client": hostile}, format="json")
        assert answer.status_code == 400 and answer.json() == {"client": ["Use printable characters only."]}


def test_a_client_polling_faster_than_asked_is_told_to_slow_down(db):
    started = start()
    assert poll(started["device_code"]).status_code == 202
    hurried = poll(started["device_code"], waited=False)
    assert hurried.status_code == 429 and hurried.json()["detail"] == "Too fast: ask every 2 seconds."


def test_the_page_says_when_the_sign_in_was_started_from_another_address(client, alice):
    started = APIClient(REMOTE_ADDR="10.1.2.3").post("/api/v1/token/code/", {"client": "gpulab on n1"}, format="json")
    client.force_login(alice)
    page = client.post("/cli/login/", {"code": started.json()["user_code"]})
    assert b"from 10.1.2.3." in page.content and b'id="cli-elsewhere"' in page.content
