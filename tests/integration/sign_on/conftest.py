"""The campus services for sign-on tests: a fresh slapd directory and the OpenID provider, with settings to match.

`campus_settings(**env)` turns the portal's sign-in environment variables into live settings through the same
code as portal/settings.py (portal/sign_on.py), so the tests configure the portal the way an operator does.
"""

from __future__ import annotations

import re

import pytest
import requests
from django.contrib.auth import get_user_model
from django.test import Client

from portal.sign_on import sign_on_settings
from tests.sign_on import PEOPLE_PASSWORD, OidcProvider, Slapd, account

SIGN_ON_VARIABLES = ("LOCAL_PASSWORDS", "OIDC_", "LDAP_")


@pytest.fixture
def campus_settings(settings, monkeypatch):
    def apply(**env: str):
        import os

        for name in list(os.environ):
            if name.startswith(SIGN_ON_VARIABLES):
                monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        for name, value in sign_on_settings().items():
            setattr(settings, name, value)
        return settings

    return apply


@pytest.fixture(scope="session")
def _slapd():
    """One slapd per test process: starting one costs a second or more, putting its entries back a few ms."""
    slapd = Slapd().start()
    yield slapd
    slapd.stop()


@pytest.fixture
def directory(_slapd):
    """The campus directory, as tests/sign_on.py writes it, whatever the test before changed in it."""
    _slapd.reset()
    return _slapd


@pytest.fixture
def ldap_on(directory, campus_settings):
    """The portal signing people in against `directory`, local passwords still on."""
    campus_settings(**directory.settings_env())
    return directory


@pytest.fixture(scope="session")
def provider():
    provider = OidcProvider().start()
    yield provider
    provider.stop()


@pytest.fixture
def oidc_on(provider, campus_settings):
    provider.set_accounts(
        {
            "lena": account("lena", "lena@campus.example", groups=["hpc-students"]),
            "sam": account("sam", "sam@campus.example", groups=["portal-admins"]),
        }
    )
    campus_settings(**provider.settings_env())
    return provider


class CampusBrowser:
    """A browser without the pixels: the portal through Django's test client (as http://127.0.0.1, the address
    the provider accepts for the client's redirect), the provider through HTTP; follows the real redirects."""

    def __init__(self, provider: OidcProvider):
        self.portal = Client(HTTP_HOST="127.0.0.1")
        self.idp = requests.Session()
        self.provider = provider

    def authorize(self, login: str, password: str = PEOPLE_PASSWORD, start: str = "/oidc/login/") -> str:
        """Start at the portal's campus button, sign in and consent at the provider; the callback URL it sends back."""
        begun = self.portal.get(start)
        assert begun.status_code == 302, begun
        url = begun["Location"]
        for _ in range(20):
            if url.startswith("http://127.0.0.1/oidc/callback/"):
                return url
            response = self.idp.get(url, allow_redirects=False, timeout=10)
            if response.status_code in (302, 303):
                url = requests.compat.urljoin(url, response.headers["Location"])
                continue
            form = re.search(r'action="(/interaction/[^"]+)"', response.text)
            assert form, response.text[:500]
            data = {"login": login, "password": password} if form.group(1).endswith("/login") else {}
            response = self.idp.post(self.provider.issuer + form.group(1), data=data, allow_redirects=False, timeout=10)
            assert response.status_code in (302, 303), response.text[:500]
            url = requests.compat.urljoin(url, response.headers["Location"])
        raise AssertionError("the provider never redirected back to the portal")

    def callback(self, url: str):
        return self.portal.get(url.removeprefix("http://127.0.0.1"), follow=True)

    def sign_in(self, login: str, start: str = "/oidc/login/"):
        return self.callback(self.authorize(login, start=start))

    def signed_in_as(self) -> str | None:
        user_id = self.portal.session.get("_auth_user_id")
        return get_user_model().objects.get(pk=user_id).username if user_id else None


@pytest.fixture
def browser(oidc_on):
    return CampusBrowser(oidc_on)
