"""HTTP to slurmrestd: one pooled `requests` session per process and server, JWT headers, SLURM's errors read.

slurmrestd answers most failures with HTTP 500 and the reason in `errors[]` (a refused impersonation is error 5005,
not a 401), so every answer's `errors[]` is read whatever its status. A lapsed token is noticed here from its `exp`
before any request, so the admin reads "the token expired" instead of SLURM's "Unspecified error".
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import UTC, datetime

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter

from ... import tokens
from .errors import RestRejected, RestUnreachable, SchedulerUnavailable, TokenExpired, TokenRejected

logger = logging.getLogger(__name__)

# SLURM error numbers (slurm_errno.h) the portal explains in its own words.
INVALID_JOB_ID = 2017
# slurmctld closes the connection on a token that names another user without being the SlurmUser's.
IMPERSONATION_REFUSED = 5005
AUTHENTICATION_ERROR = 1007
CONTROLLER_UNREACHABLE = {1001, 1002, 1003, 1004}  # slurmrestd is up, slurmctld is not answering it


class _Sessions:
    """Process-wide sessions by server URL; a forked child starts with none (sockets are not shared)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, requests.Session] = {}
        self._pid = os.getpid()
        self.requests = 0  # HTTP requests made by this process, for benchmarks and tests

    def get(self, base_url: str) -> requests.Session:
        with self._lock:
            if os.getpid() != self._pid:
                self._sessions, self._pid, self.requests = {}, os.getpid(), 0
            session = self._sessions.get(base_url)
            if session is None:
                session = self._sessions[base_url] = requests.Session()
                adapter = HTTPAdapter(pool_connections=1, pool_maxsize=16, max_retries=0)
                session.mount("http://", adapter)
                session.mount("https://", adapter)
            return session


sessions = _Sessions()


def error_messages(data: dict) -> list[tuple[int | None, str]]:
    """SLURM's errors from an answer, as (number, words); the versions name the fields differently."""
    found = []
    for entry in data.get("errors") or []:
        if not isinstance(entry, dict):
            continue
        numbers = [entry[k] for k in ("error_number", "error_code", "errno") if isinstance(entry.get(k), int)]
        number = numbers[0] if numbers else None
        words = [str(entry[k]) for k in ("error", "description") if entry.get(k)]
        found.append((number, ": ".join(dict.fromkeys(words)) or "unknown error"))
    return found


class RestClient:
    """Requests to one slurmrestd as one SLURM user, authenticated by one token."""

    def __init__(self, base_url: str, token: str, user: str, *, cluster_name: str):
        self.base_url, self.token, self.user, self.cluster_name = base_url.rstrip("/"), token, user, cluster_name

    def _check_token(self) -> None:
        try:
            lapses = tokens.expires_at(self.token)
        except tokens.NotAToken:
            raise TokenRejected(f"The stored slurmrestd token of “{self.cluster_name}” is not a JWT.") from None
        if lapses is not None and lapses <= datetime.now(UTC):
            raise TokenExpired(
                f"The slurmrestd token of “{self.cluster_name}” expired on {lapses:%Y-%m-%d %H:%M} UTC. An admin must "
                "store a new one on the cluster's account (e.g. from `scontrol token lifespan=…`); jobs keep their "
                "last known state until then."
            )

    def request(self, method: str, path: str, *, params: dict | None = None, body: dict | None = None) -> tuple:
        """(HTTP status, JSON answer or {}). Raises for unreachable servers and refused tokens only."""
        self._check_token()
        headers = {"X-SLURM-USER-NAME": self.user, "X-SLURM-USER-TOKEN": self.token, "Accept": "application/json"}
        timeout = (settings.GPULAB_SSH_CONNECT_TIMEOUT, settings.GPULAB_SSH_COMMAND_TIMEOUT)
        sessions.requests += 1
        try:
            response = sessions.get(self.base_url).request(
                method, self.base_url + path, params=params, json=body, headers=headers, timeout=timeout
            )
        except requests.RequestException as exc:
            reason = type(exc).__name__ if not str(exc) else str(exc).split(": ")[-1][:200]
            raise RestUnreachable(
                f"Cannot reach slurmrestd of “{self.cluster_name}” at {self.base_url} ({reason}). "
                "The portal keeps trying; jobs keep their last known state."
            ) from None
        if response.status_code in (401, 403):
            raise TokenRejected(
                f"slurmrestd of “{self.cluster_name}” refused the portal's token (HTTP {response.status_code}). An "
                "admin must store a valid token for the cluster's account."
            )
        if response.status_code == 304:
            return 304, {}
        try:
            data = response.json()
        except ValueError:
            raise RestUnreachable(
                f"slurmrestd of “{self.cluster_name}” answered HTTP {response.status_code} without an API answer; "
                "is a proxy in the way, or is the daemon restarting?"
            ) from None
        numbers = {number for number, _ in error_messages(data)}
        if AUTHENTICATION_ERROR in numbers:
            raise TokenRejected(f"SLURM on “{self.cluster_name}” refused the portal's token; an admin must replace it.")
        if numbers & CONTROLLER_UNREACHABLE:
            raise SchedulerUnavailable(
                f"The SLURM controller of “{self.cluster_name}” is not answering slurmrestd; jobs keep their last "
                "known state until it is back."
            )
        return response.status_code, data if isinstance(data, dict) else {}

    def call(self, method: str, path: str, **kwargs) -> dict:
        """An answer without SLURM errors, or RestRejected with SLURM's own words."""
        status, data = self.request(method, path, **kwargs)
        errors = error_messages(data)
        if errors or status >= 400:
            words = "; ".join(text for _, text in errors) or f"HTTP {status}"
            error = RestRejected(words)
            error.numbers = tuple(number for number, _ in errors)
            raise error
        return data
