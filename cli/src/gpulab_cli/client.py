"""The portal's REST API (/api/v1/), and its refusals as exceptions that carry the portal's own words.

Knows HTTP and the API's conventions (token header, limit/offset pages, {"detail": …} and per-field errors); knows
nothing of the terminal: the commands decide what to print and with which exit code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import requests

from . import __version__

JSONObject = dict[str, Any]  # one object of the portal's JSON: a job, a template, a cluster

API = "/api/v1"
PAGE_SIZE = 500  # the portal's largest page (portal/api_limits.py MAX_PAGE_SIZE)
TIMEOUT = (10, 60)  # seconds to connect, seconds between bytes


class PortalError(Exception):
    """Anything that kept a request from getting its answer; str() is for the person at the terminal."""


class Refused(PortalError):
    """A 4xx: the portal understood and said no (wrong password, not found, not allowed, invalid field)."""

    def __init__(self, status: int, body: object):
        self.status, self.body = status, body
        super().__init__(describe(body) or f"The portal refused the request (HTTP {status}).")


class Unavailable(PortalError):
    """The portal could not be reached, or answered with a server error or something that is not its JSON."""


def describe(body: object, prefix: str = "") -> str:
    """The portal's refusal in its own words: `detail` as it is, each invalid field as `field: message`."""
    if isinstance(body, str):
        return f"{prefix}{body}"
    if isinstance(body, list):
        return "\n".join(describe(item, prefix) for item in body)
    if not isinstance(body, dict):
        return ""
    lines = []
    for key, value in body.items():
        if key in ("detail", "non_field_errors"):
            lines.append(describe(value, prefix))
        else:  # params nest one level more: {"params": {"seconds": ["…"]}} reads "seconds: …"
            lines.append(describe(value, "" if key == "params" else f"{key}: "))
    return "\n".join(line for line in lines if line)


class Portal:
    """One portal, as one user (a token) or as no one (to sign in)."""

    def __init__(self, url: str, token: str | None = None):
        self.url = url.rstrip("/")
        self.http = requests.Session()
        self.http.headers["User-Agent"] = f"gpulab-cli/{__version__}"
        self.http.headers["Accept"] = "application/json"
        if token:
            self.http.headers["Authorization"] = f"Token {token}"

    def send(self, method: str, endpoint: str, /, **kwargs: Any) -> requests.Response:
        """The answer, once it is known to be neither a refusal (4xx: Refused) nor a failure (5xx: Unavailable)."""
        try:
            response = self.http.request(method, f"{self.url}{API}{endpoint}", timeout=TIMEOUT, **kwargs)
        except requests.RequestException as exc:
            raise Unavailable(f"Cannot reach {self.url}: {_reason(exc)}") from None
        if 300 <= response.status_code < 400:
            where = response.headers.get("Location", "elsewhere")
            raise Unavailable(f"{self.url} sends this request to {where}: sign in with that address instead.")
        if 400 <= response.status_code < 500:
            raise Refused(response.status_code, _json_or_none(response))
        if response.status_code >= 500:
            detail = describe(_json_or_none(response))
            raise Unavailable(f"{self.url} answered HTTP {response.status_code}" + (f": {detail}" if detail else "."))
        return response

    def request(self, method: str, endpoint: str, /, **kwargs: Any) -> Any:
        """The answer's JSON (None for 204), or Refused/Unavailable."""
        response = self.send(method, endpoint, **kwargs)
        if response.status_code == 204:
            return None
        body = _json_or_none(response)
        if body is None:
            raise Unavailable(f"{self.url} answered HTTP {response.status_code}, but not with its API's JSON.")
        return body

    def get(self, endpoint: str, /, **params: Any) -> Any:
        """GET with query parameters (those given as None are left out)."""
        return self.request("GET", endpoint, params=_present(params))

    def post(self, endpoint: str, body: JSONObject | None = None) -> Any:
        return self.request("POST", endpoint, json=body if body is not None else {})

    def delete(self, endpoint: str) -> Any:
        return self.request("DELETE", endpoint)

    def each(self, endpoint: str, /, *, limit: int | None = None, **params: Any) -> Iterator[JSONObject]:
        """Every item of a list endpoint, page after page (newest first where the portal orders so), up to limit.

        Offsets are counted here rather than following `next`, whose host and scheme a proxy may have rewritten."""
        offset = 0
        while limit is None or offset < limit:
            size = PAGE_SIZE if limit is None else min(PAGE_SIZE, limit - offset)
            page = self.get(endpoint, **params, limit=size, offset=offset)
            items = page["results"] if isinstance(page, dict) else page
            yield from items
            offset += len(items)
            if len(items) < size or not isinstance(page, dict) or page.get("next") is None:
                return

    def obtain_token(self, username: str, password: str) -> str:
        # Not after a redirect: a 307 to another host would carry the password there.
        answer = self.request(
            "POST", "/token/", json={"username": username, "password": password}, allow_redirects=False
        )
        return str(answer["token"])

    def start_code_login(self, client: str) -> JSONObject:
        """A sign-in the user confirms in their browser: {device_code, user_code, verification_url, interval, …}."""
        return dict(self.request("POST", "/token/code/", json={"client": client}, allow_redirects=False))

    def poll_code_login(self, device_code: str) -> JSONObject | None:
        """{token, username} once the user has confirmed, None while they have not; Refused (410) when it ended."""
        response = self.send("POST", "/token/code/poll/", json={"device_code": device_code}, allow_redirects=False)
        return None if response.status_code == 202 else dict(response.json())

    def revoke_token(self) -> None:
        self.delete("/token/")


def _json_or_none(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _present(params: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in params.items() if value is not None}


def _reason(exc: requests.RequestException) -> str:
    if isinstance(exc, requests.exceptions.SSLError):
        return f"its TLS certificate was not accepted ({exc})"
    if isinstance(exc, requests.ConnectionError):
        return "connection refused or no route (is the address right, and the portal up?)"
    if isinstance(exc, requests.Timeout):
        return "no answer in time"
    return str(exc)
