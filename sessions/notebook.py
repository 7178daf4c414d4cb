"""A running job's JupyterLab, kind-neutral: where it listens (the kind's answer, kept a short while), its kernels,
and the path under which the portal proxies it.

Invariant: the kind says where the server listens and how to reach it (Kind.notebook_address); everything else here
and in sessions/notebook_proxy.py is the same for every kind. The server's token never leaves the portal: it is
kept encrypted in the cache and added to each proxied request; the browser never sees it. A client certificate the
portal presents on the way (Kubernetes) stays in the files its client holds: the address names them, nothing copies
them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import ssl
import tempfile
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from urllib.parse import urlencode

import requests
from django.core.cache import cache
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from clusters import crypto, kinds
from clusters.backends.kind import ActionRefused, NotebookAddress
from core.choices import SessionKind
from jobs import session_tokens
from jobs.models import Job

ADDRESS_SECONDS = 300  # a server keeps its port for its life; a restart is found when this runs out or fails
PREFIX = "/jobs/{job_id}/lab/"  # the server's --ServerApp.base_url: the portal proxies this path unchanged
KERNELS_TIMEOUT = 10
ANSWER_TIMEOUT = 3  # the session page asks every few seconds whether the server answers yet
WARN_MINUTES = 10  # the session page warns this long before the allocation ends


def prefix(job_id) -> str:
    return PREFIX.format(job_id=job_id)


def is_notebook(job: Job) -> bool:
    return job.template.session == SessionKind.JUPYTERLAB


def _key(job_id) -> str:
    return f"gpulab:notebook:{job_id}"


def address(job: Job) -> NotebookAddress:
    """The kind's answer for this job, from the cache when it was asked within ADDRESS_SECONDS, with the token the
    portal made for the session (jobs/session_tokens.py): never one a file on the cluster names."""
    kept = cache.get(_key(job.pk))
    if kept:
        found = NotebookAddress(**json.loads(crypto.decrypt(kept)))
        if all(os.path.isfile(path) for path in (found.cert_file, found.key_file) if path):
            return found
        # The certificate's files belong to the process that asked the kind (gone, or another one's): ask again here.
    found = kinds.kind_of(job.cluster.kind).notebook_address(job)
    token = session_tokens.of(job)
    if token:
        found = replace(found, token=token)
    elif not found.token:
        raise ActionRefused("This session was launched before the portal kept its token; launch it again.")
    cache.set(_key(job.pk), crypto.encrypt(json.dumps(found.__dict__)), ADDRESS_SECONDS)
    return found


def forget(job_id) -> None:
    """The server did not answer where it was said to be: ask the kind again next time."""
    cache.delete(_key(job_id))


def upstream_headers(found: NotebookAddress) -> dict[str, str]:
    """What authenticates the portal on the way: the server's token, or the headers of a proxy in between (none
    where it signs in with a client certificate: the token then travels in the query alone). A server with no token
    of its own (a job's dashboard) gets the proxy's headers alone."""
    if found.token_in_query or not found.token:
        return dict(found.headers)
    return {"Authorization": f"token {found.token}"}


def upstream_query(found: NotebookAddress) -> str:
    """The token as a query parameter, where a proxy in between takes the Authorization header for itself."""
    return urlencode({"token": found.token}) if found.token_in_query and found.token else ""


def upstream_cert(found: NotebookAddress) -> tuple[str, str] | None:
    """requests' `cert`: the client certificate and key files the portal presents on the way, if any."""
    return (found.cert_file, found.key_file or found.cert_file) if found.cert_file else None


def tls_context(found: NotebookAddress) -> ssl.SSLContext | None:
    """aiohttp's TLS for the server: checked against its CA, presenting the client certificate; None: the default."""
    return _tls_context(found.ca_pem, *(upstream_cert(found) or ("", "")))


@functools.lru_cache(maxsize=32)
def _tls_context(ca_pem: str, cert_file: str, key_file: str) -> ssl.SSLContext | None:
    if not ca_pem and not cert_file:
        return None
    context = ssl.create_default_context(cadata=ca_pem or None)
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


def unrewritten(text: bytes, found: NotebookAddress, served_at: str = "/") -> bytes:
    """A page without the links a proxy on the way rewrote to its own path: the browser asks the portal's path.
    `served_at`: the portal's path for the server's root ("/" for JupyterLab, which serves under the portal's own
    path; a job's dashboard serves from its root, which the portal proxies under /jobs/<id>/dashboard/)."""
    if not found.rewritten_prefix:
        return text
    for rewritten in (found.url, found.rewritten_prefix):  # as a whole URL (Location) or as a path (links)
        text = text.replace(f"{rewritten}/".encode(), served_at.encode())
    return text


def _get(job: Job, path: str, timeout: float) -> requests.Response:
    """GET a path of the job's server under its prefix, as the proxy reaches it (token, headers, CA); a server that
    does not answer is forgotten, so the next request asks the kind where it is again."""
    found = address(job)
    query = upstream_query(found)
    try:
        with _verify(found) as verify:
            return requests.get(
                f"{found.url}{prefix(job.pk)}{path}" + (f"?{query}" if query else ""),
                headers=upstream_headers(found),
                timeout=timeout,
                verify=verify,
                cert=upstream_cert(found),
            )
    except requests.RequestException:
        forget(job.pk)
        raise


def answers(job: Job) -> bool:
    """Whether the job's server answers its status API now (the session page loads JupyterLab once it does)."""
    try:
        return _get(job, "api/status", ANSWER_TIMEOUT).status_code == 200
    except requests.RequestException:
        return False


def last_kernel_activity(job: Job) -> tuple[bool, datetime | None]:
    """(whether a kernel is busy, the newest kernel activity) from Jupyter's /api/kernels, as the portal."""
    response = _get(job, "api/kernels", KERNELS_TIMEOUT)
    try:
        response.raise_for_status()
        kernels = response.json()
    except (requests.RequestException, ValueError):
        forget(job.pk)
        raise
    busy = any(k.get("execution_state") == "busy" for k in kernels)
    times = [parse_datetime(k["last_activity"]) for k in kernels if k.get("last_activity")]
    return busy, max(filter(None, times), default=None)


@dataclass(frozen=True)
class Clock:
    """How long the session has left before its allocation ends, as the session page shows it."""

    ends_at: datetime | None
    minutes_left: int | None

    @property
    def ending_soon(self) -> bool:
        return self.minutes_left is not None and self.minutes_left <= WARN_MINUTES


def clock(job: Job, now: datetime | None = None) -> Clock:
    limit = kinds.kind_of(job.cluster.kind).time_limit_minutes(job)
    if job.started_at is None or not limit:
        return Clock(None, None)
    ends_at = job.started_at + timedelta(minutes=limit)
    left = (ends_at - (now or timezone.now())).total_seconds() / 60
    return Clock(ends_at, max(0, math.ceil(left)))


@contextlib.contextmanager
def _verify(found: NotebookAddress):
    """requests' `verify` for the server: its CA as a file while the request runs, or the default."""
    if not found.ca_pem:
        yield True
        return
    with tempfile.NamedTemporaryFile("w", suffix=".pem") as ca_file:
        ca_file.write(found.ca_pem)
        ca_file.flush()
        yield ca_file.name
