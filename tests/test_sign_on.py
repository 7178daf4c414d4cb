"""Sign-in configuration from the environment, and the login page it gives (no campus services needed)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from portal.sign_on import AXES_BACKEND, LDAP_BACKEND, LOCAL_BACKEND, OIDC_BACKEND, sign_on_settings

OIDC_ENV = {
    "OIDC_ISSUER": "https://idp.campus.example",
    "OIDC_AUTHORIZATION_ENDPOINT": "https://idp.campus.example/auth",
    "OIDC_TOKEN_ENDPOINT": "https://idp.campus.example/token",
    "OIDC_USERINFO_ENDPOINT": "https://idp.campus.example/me",
    "OIDC_JWKS_ENDPOINT": "https://idp.campus.example/jwks",
    "OIDC_CLIENT_ID": "portal",
    "OIDC_CLIENT_SECRET": "s3cret",
}


@pytest.fixture
def env(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith(("LOCAL_PASSWORDS", "OIDC_", "LDAP_")):
            monkeypatch.delenv(name)

    def set_env(**values):
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    return set_env


def test_default_is_local_passwords_behind_the_lockout(env):
    assert sign_on_settings()["AUTHENTICATION_BACKENDS"] == [AXES_BACKEND, LOCAL_BACKEND]


def test_every_way_in_can_be_on_with_the_lockout_first(env):
    env(LDAP_SERVER_URI="ldap://127.0.0.1:1", LDAP_USER_SEARCH_BASE="ou=people,dc=x", **OIDC_ENV)
    settings = sign_on_settings()
    assert settings["AUTHENTICATION_BACKENDS"] == [AXES_BACKEND, LDAP_BACKEND, LOCAL_BACKEND, OIDC_BACKEND]
    assert settings["OIDC_USE_PKCE"] and settings["OIDC_PKCE_CODE_CHALLENGE_METHOD"] == "S256"
    assert settings["OIDC_USE_NONCE"]
    assert settings["AUTH_LDAP_PERMIT_EMPTY_PASSWORD"] is False


def test_local_passwords_can_be_turned_off(env):
    env(LOCAL_PASSWORDS="0", **OIDC_ENV)
    assert LOCAL_BACKEND not in sign_on_settings()["AUTHENTICATION_BACKENDS"]


def test_turning_everything_off_is_refused_at_start(env):
    env(LOCAL_PASSWORDS="0")
    with pytest.raises(ImproperlyConfigured, match="nobody could sign in"):
        sign_on_settings()


def test_half_configured_oidc_names_the_missing_variable(env):
    env(**{**OIDC_ENV, "OIDC_CLIENT_SECRET": ""})
    with pytest.raises(ImproperlyConfigured, match="OIDC_CLIENT_SECRET"):
        sign_on_settings()


def test_oidc_secret_may_come_from_a_file(env, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("from-a-file\n")
    env(**{**OIDC_ENV, "OIDC_CLIENT_SECRET": "", "OIDC_CLIENT_SECRET_FILE": str(secret)})
    assert sign_on_settings()["OIDC_RP_CLIENT_SECRET"] == "from-a-file"


def test_ldap_staff_group_needs_a_group_base(env):
    env(LDAP_SERVER_URI="ldap://127.0.0.1:1", LDAP_USER_SEARCH_BASE="ou=people,dc=x", LDAP_STAFF_GROUP="cn=a,dc=x")
    with pytest.raises(ImproperlyConfigured, match="LDAP_GROUP_SEARCH_BASE"):
        sign_on_settings()


@pytest.mark.django_db
def test_login_page_shows_the_campus_button_before_the_password_form(client, settings, env):
    env(**OIDC_ENV)
    for name, value in sign_on_settings().items():
        setattr(settings, name, value)
    page = client.get("/login/").content.decode()
    assert "Sign in with your campus account" in page
    assert page.index('id="campus-sign-in"') < page.index('name="password"')
    assert "autofocus" not in page  # the button is first; the username field does not take the focus


@pytest.mark.django_db
def test_login_page_without_passwords_shows_only_the_campus_button(client, settings, env):
    env(LOCAL_PASSWORDS="0", OIDC_BUTTON_LABEL="Sign in with UniID", **OIDC_ENV)
    for name, value in sign_on_settings().items():
        setattr(settings, name, value)
    page = client.get("/login/").content.decode()
    assert "Sign in with UniID" in page
    assert 'name="password"' not in page


@pytest.mark.django_db
def test_login_page_without_sso_is_the_password_form(client, settings, env):
    for name, value in sign_on_settings().items():
        setattr(settings, name, value)
    page = client.get("/login/").content.decode()
    assert 'name="password"' in page and "campus-sign-in" not in page
    assert "autofocus" in page


@pytest.mark.django_db
def test_only_admins_name_a_courses_campus_groups(client, admin_user, instructor, course):
    url = "/admin/signon/coursegroup/add/"
    assert client.get(url).status_code == 302  # anonymous: to the admin login
    client.force_login(instructor)
    assert client.get(url).status_code == 302  # an instructor is not staff
    client.force_login(admin_user)
    assert client.get(url).status_code == 200
    answer = client.post(url, {"course": course.pk, "source": "ldap", "group": "hpc-students", "role": "student"})
    assert answer.status_code == 302
    assert course.campus_groups.get().group == "hpc-students"


@pytest.mark.django_db
def test_group_sync_audit_is_read_only_even_for_admins(client, admin_user, alice, course):
    from signon.models import GroupSyncChange

    change = GroupSyncChange.objects.create(
        course=course, user=alice, username="alice", action="enrolled", source="oidc", via="sign-in"
    )
    client.force_login(admin_user)
    assert client.get("/admin/signon/groupsyncchange/").status_code == 200
    assert client.get("/admin/signon/groupsyncchange/add/").status_code == 403
    client.post(f"/admin/signon/groupsyncchange/{change.pk}/change/", {"username": "mallory"})
    assert GroupSyncChange.objects.get(pk=change.pk).username == "alice"
    assert client.post(f"/admin/signon/groupsyncchange/{change.pk}/delete/", {"post": "yes"}).status_code == 403


@pytest.mark.django_db
def test_roster_page_tells_instructors_which_campus_groups_it_follows(client, instructor, course):
    from signon.models import CourseGroup

    client.force_login(instructor)
    assert "campus-groups" not in client.get(f"/courses/{course.slug}/roster/").content.decode()
    CourseGroup.objects.create(course=course, source="ldap", group="hpc-students", role="student")
    page = client.get(f"/courses/{course.slug}/roster/").content.decode()
    assert "This roster follows campus groups" in page and "hpc-students" in page
