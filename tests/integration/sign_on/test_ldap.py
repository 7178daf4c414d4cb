"""Signing in against a real slapd: the login page, the token endpoint (one bind per request), names, mail and staff
from the directory, hostile usernames and empty passwords."""

from __future__ import annotations

import ldap
import pytest
from django.contrib.auth import authenticate, get_user_model
from django.test import Client, RequestFactory
from rest_framework.test import APIClient

from courses.models import Enrollment
from courses.roster import import_roster
from tests.conftest import PASSWORD
from tests.sign_on import BASE_DN, PEOPLE_PASSWORD, free_port

User = get_user_model()


def log_in(username: str, password: str) -> Client:
    client = Client()
    client.post("/login/", {"username": username, "password": password})
    return client


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.django_db
def test_campus_user_signs_in_with_directory_password_and_gets_name_and_mail(ldap_on):
    assert signed_in(log_in("lena", PEOPLE_PASSWORD))
    lena = User.objects.get(username="lena")
    assert (lena.first_name, lena.last_name, lena.email) == ("Lena", "Lindqvist", "lena@campus.example")
    assert not lena.has_usable_password()  # the campus password is never stored
    assert not lena.is_staff


@pytest.mark.django_db
def test_wrong_directory_password_is_refused_with_the_usual_message(ldap_on):
    client = Client()
    page = client.post("/login/", {"username": "lena", "password": "not-it"})
    assert not signed_in(client)
    assert "Please enter a correct username and password" in page.content.decode()


@pytest.mark.django_db
def test_directory_staff_group_makes_an_admin_and_leaving_it_unmakes_one(ldap_on):
    assert signed_in(log_in("sam", PEOPLE_PASSWORD))
    assert User.objects.get(username="sam").is_staff
    ldap_on.modify(
        f"dn: cn=portal-admins,ou=groups,{BASE_DN}\nchangetype: modify\nreplace: member\n"
        f"member: uid=tara,ou=people,{BASE_DN}\n"
    )
    assert signed_in(log_in("sam", PEOPLE_PASSWORD))
    assert not User.objects.get(username="sam").is_staff


@pytest.mark.django_db
def test_roster_account_is_joined_by_its_directory_sign_in(ldap_on, course):
    import_roster(course, "username,email,role\nlena,,student\n")
    roster_lena = User.objects.get(username="lena")
    assert signed_in(log_in("lena", PEOPLE_PASSWORD))
    assert User.objects.filter(username="lena").count() == 1
    assert Enrollment.objects.get(course=course).user_id == roster_lena.pk
    assert User.objects.get(pk=roster_lena.pk).email == "lena@campus.example"


@pytest.mark.django_db
def test_token_endpoint_binds_to_the_directory_per_request(ldap_on):
    api = APIClient()
    first = api.post("/api/v1/token/", {"username": "omar", "password": PEOPLE_PASSWORD}, format="json")
    assert first.status_code == 200, first.content
    again = api.post("/api/v1/token/", {"username": "omar", "password": PEOPLE_PASSWORD}, format="json")
    assert again.json()["token"] == first.json()["token"]
    # The directory is asked every time: a password changed there takes effect at once.
    ldap_on.modify(
        f"dn: uid=omar,ou=people,{BASE_DN}\nchangetype: modify\nreplace: userPassword\nuserPassword: new-1\n"
    )
    old = api.post("/api/v1/token/", {"username": "omar", "password": PEOPLE_PASSWORD}, format="json")
    assert old.status_code == 400
    assert api.post("/api/v1/token/", {"username": "omar", "password": "new-1"}, format="json").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("username", ["*", ")(uid=*", "lena)(uid=*", "*)(|(uid=*", "le*", "lena\\2a"])
def test_filter_metacharacters_in_a_username_match_nobody(ldap_on, username):
    """With the right password of a real person: an unescaped filter would find lena (or everyone) and bind."""
    assert authenticate(RequestFactory().post("/login/"), username=username, password=PEOPLE_PASSWORD) is None
    assert not signed_in(log_in(username, PEOPLE_PASSWORD))
    token = APIClient().post("/api/v1/token/", {"username": username, "password": PEOPLE_PASSWORD}, format="json")
    assert token.status_code == 400
    assert not User.objects.exists()


@pytest.mark.django_db
def test_empty_password_is_refused_although_the_directory_accepts_an_empty_bind(ldap_on):
    # The danger is real: an empty simple bind is anonymous, and slapd answers it with success.
    connection = ldap.initialize(ldap_on.url)
    connection.simple_bind_s(f"uid=lena,ou=people,{BASE_DN}", "")
    connection.unbind_s()
    assert authenticate(RequestFactory().post("/login/"), username="lena", password="") is None
    assert not signed_in(log_in("lena", ""))
    assert not User.objects.filter(username="lena").exists()


@pytest.mark.django_db
def test_local_passwords_off_refuses_portal_passwords_but_not_the_directory(ldap_on, campus_settings, make_user):
    campus_settings(LOCAL_PASSWORDS="0", **ldap_on.settings_env())
    make_user("localonly")
    assert not signed_in(log_in("localonly", PASSWORD))
    token = APIClient().post("/api/v1/token/", {"username": "localonly", "password": PASSWORD}, format="json")
    assert token.status_code == 400
    assert signed_in(log_in("lena", PEOPLE_PASSWORD))


@pytest.mark.django_db
def test_local_passwords_still_work_beside_the_directory(ldap_on, make_user):
    make_user("visitor")
    assert signed_in(log_in("visitor", PASSWORD))


@pytest.mark.django_db
def test_an_unreachable_directory_is_said_so_not_called_a_wrong_password(directory, campus_settings):
    # The session's slapd serves other tests: the portal is pointed at a port where no directory listens.
    campus_settings(**{**directory.settings_env(), "LDAP_SERVER_URI": f"ldap://127.0.0.1:{free_port()}"})
    client = Client()
    page = client.post("/login/", {"username": "lena", "password": PEOPLE_PASSWORD})
    assert not signed_in(client)
    assert "The campus directory did not answer" in page.content.decode()
    token = APIClient().post("/api/v1/token/", {"username": "lena", "password": PEOPLE_PASSWORD}, format="json")
    assert token.status_code == 503
    assert "did not answer" in token.json()["detail"]
