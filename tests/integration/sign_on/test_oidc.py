"""Signing in through a real OpenID provider (oidc-provider on 127.0.0.1): PKCE, state, nonce, the ID token's
audience and expiry, joining roster accounts, groups to staff, logout at the provider, and the attacks on each."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlparse

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from courses.models import Enrollment
from courses.roster import import_roster
from signon.models import CampusIdentity
from tests.sign_on import account

from .conftest import CampusBrowser

User = get_user_model()
pytestmark = pytest.mark.django_db


def failure_message(page) -> str:
    return " ".join(str(m) for m in page.context["messages"]) if page.context else ""


def test_campus_sign_in_uses_pkce_state_and_nonce_and_lands_signed_in(browser):
    start = browser.portal.get("/oidc/login/")
    query = parse_qs(urlparse(start["Location"]).query)
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) >= 43
    assert query["state"][0] and query["nonce"][0]
    page = browser.sign_in("lena")
    assert page.redirect_chain[-1][0] == "/"  # the template catalog
    assert browser.signed_in_as() == "lena"
    lena = User.objects.get(username="lena")
    assert (lena.first_name, lena.email, lena.is_staff) == ("Lena", "lena@campus.example", False)
    assert not lena.has_usable_password()
    assert CampusIdentity.objects.filter(user=lena, subject="lena").exists()


def test_staff_group_claim_makes_an_admin(browser):
    browser.sign_in("sam")
    assert User.objects.get(username="sam").is_staff


def test_wrong_state_is_refused_with_a_message(browser):
    callback = browser.authorize("lena")
    forged = callback.replace("state=", "state=forged")
    page = browser.callback(forged)
    assert browser.signed_in_as() is None
    assert "did not work" in failure_message(page)


def test_replayed_callback_signs_nobody_in(browser, oidc_on):
    callback = browser.authorize("lena")
    browser.callback(callback)
    assert browser.signed_in_as() == "lena"
    browser.portal.post("/logout/")
    assert browser.signed_in_as() is None
    browser.callback(callback)  # the same code and state again: the state was used up
    assert browser.signed_in_as() is None


def test_replayed_code_is_refused_by_the_provider_even_with_its_state_restored(browser):
    callback = browser.authorize("lena")
    saved = dict(browser.portal.session["oidc_states"])
    browser.callback(callback)
    browser.portal.post("/logout/")
    browser.portal.cookies.pop(settings.SESSION_COOKIE_NAME)
    session = browser.portal.session
    session["oidc_states"] = saved  # an attacker with the old session entry (state, nonce, PKCE verifier)
    session.save()
    page = browser.callback(callback)
    assert browser.signed_in_as() is None
    assert "may have been used already" in failure_message(page)


def test_code_without_the_pkce_verifier_is_refused(browser):
    callback = browser.authorize("lena")
    session = browser.portal.session
    for entry in session["oidc_states"].values():
        entry["code_verifier"] = "x" * 64  # not the verifier of this code's challenge
    session.save()
    browser.callback(callback)
    assert browser.signed_in_as() is None


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({"nonce": "not-the-one-we-sent"}, "wrong nonce"),
        ({"aud": "some-other-client"}, "wrong audience"),
        ({"aud": ["gpulab-portal", "other"], "azp": "other"}, "several audiences, another authorized party"),
        ({"iss": "http://127.0.0.1:1"}, "wrong issuer"),
        ({"exp": int(time.time()) - 3600, "iat": int(time.time()) - 7200}, "expired"),
    ],
)
def test_validly_signed_id_token_with_wrong_claims_is_refused(browser, oidc_on, claims, why):
    callback = browser.authorize("lena")
    oidc_on.tamper_next_id_token(**claims)
    page = browser.callback(callback)
    assert browser.signed_in_as() is None, why
    assert "did not work" in failure_message(page)
    assert not User.objects.filter(username="lena").exists()


def test_tampering_switch_itself_keeps_a_good_token_good(browser, oidc_on):
    """The provider re-signs with its own key: the refusals above are about the claims, not the signature."""
    callback = browser.authorize("lena")
    oidc_on.tamper_next_id_token(given_name="Lena")
    browser.callback(callback)
    assert browser.signed_in_as() == "lena"


def test_roster_user_is_joined_by_the_username_claim(browser, course):
    import_roster(course, "username,email,role\nlena,,student\n")
    roster_lena = User.objects.get(username="lena")
    browser.sign_in("lena")
    assert browser.signed_in_as() == "lena"
    assert User.objects.filter(username="lena").count() == 1
    assert Enrollment.objects.get(course=course).user_id == roster_lena.pk


def test_roster_user_is_joined_by_a_verified_email(browser, oidc_on, course):
    import_roster(course, "username,email,role\nrita,rita@campus.example,student\n")
    oidc_on.set_accounts({"rgarcia": account("rgarcia", "rita@campus.example", verified=True)})
    browser.sign_in("rgarcia")
    assert browser.signed_in_as() == "rita"
    assert not User.objects.filter(username="rgarcia").exists()


def test_unverified_email_claiming_a_roster_address_does_not_join_it(browser, oidc_on, course):
    import_roster(course, "username,email,role\nrita,rita@campus.example,student\n")
    oidc_on.set_accounts({"mallory": account("mallory", "rita@campus.example", verified=False)})
    browser.sign_in("mallory")
    assert browser.signed_in_as() == "mallory"  # a new, separate account
    mallory = User.objects.get(username="mallory")
    assert mallory.email == ""  # the unverified address is not kept either
    assert not Enrollment.objects.filter(user=mallory).exists()
    assert not CampusIdentity.objects.filter(user__username="rita").exists()


def test_an_admin_account_is_never_joined_by_a_matching_username_or_email(browser, oidc_on):
    admin = User.objects.create_superuser("opsadmin", "ops@campus.example", "a-long-local-password")
    oidc_on.set_accounts(
        {
            "opsadmin": account("opsadmin", "someone@campus.example", verified=True),
            "impostor": account("impostor", "ops@campus.example", verified=True),
        }
    )
    page = browser.sign_in("opsadmin")
    assert browser.signed_in_as() is None
    assert "already taken" in failure_message(page)
    CampusBrowser(oidc_on).sign_in("impostor")
    assert User.objects.filter(username="impostor").exists()  # a new account, not the admin's
    assert not CampusIdentity.objects.filter(user=admin).exists()


def test_later_sign_ins_find_the_person_by_subject_even_after_a_rename(browser, oidc_on):
    browser.sign_in("lena")
    oidc_on.set_accounts({"lena": account("lena-renamed", "lena@campus.example")})
    again = CampusBrowser(oidc_on)
    again.sign_in("lena")
    assert again.signed_in_as() == "lena"
    assert not User.objects.filter(username="lena-renamed").exists()


def test_logout_ends_the_campus_session_at_the_provider(browser, oidc_on):
    browser.sign_in("lena")
    response = browser.portal.post("/logout/")
    assert browser.signed_in_as() is None
    target = urlparse(response["Location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == f"{oidc_on.issuer}/session/end"
    query = parse_qs(target.query)
    assert query["post_logout_redirect_uri"] == ["http://127.0.0.1/login/"]
    assert query["id_token_hint"][0].count(".") == 2
    confirm = browser.idp.get(response["Location"], timeout=10)
    assert confirm.status_code == 200  # the provider knows the token and asks to confirm the sign-out


def test_without_account_creation_only_roster_accounts_may_sign_in(browser, oidc_on, campus_settings, course):
    campus_settings(OIDC_CREATE_USERS="0", **oidc_on.settings_env())
    import_roster(course, "username,email,role\nsam,,student\n")
    page = browser.sign_in("lena")
    assert browser.signed_in_as() is None
    assert "ask your instructor to add you to the roster" in failure_message(page)
    assert not User.objects.filter(username="lena").exists()
    CampusBrowser(oidc_on).sign_in("sam")
    assert User.objects.get(username="sam").is_staff  # the roster account, joined


def test_next_page_after_sign_in_stays_on_the_portal(browser):
    browser.portal.get("/oidc/login/?next=https://evil.example/steal")  # the library keeps only local targets
    assert browser.portal.session.get("oidc_login_next") is None
    page = browser.sign_in("lena", start="/oidc/login/?next=/jobs/")
    assert page.redirect_chain[0][0] == "/jobs/"


def test_campus_button_is_off_without_oidc(client, campus_settings):
    campus_settings()
    assert client.get("/oidc/login/").status_code == 404
    assert "campus-sign-in" not in client.get("/login/").content.decode()
