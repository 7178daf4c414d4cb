"""The JupyterLab proxy: /jobs/<id>/lab/… (HTTP and WebSockets) to the job's notebook server, through asgiproxy.

Invariant: every request and every socket is authorized by the access helper (jobs/access.get_job_notebook) before
anything reaches the server: another student's job answers 404, the same as a missing one, on HTTP and on the
WebSocket handshake. The server's token is added here (Authorization header) and never sent to the browser; the
browser's portal cookies and credentials are never sent to the server (it runs the student's code), and the
server's cookies never reach the browser. Unsafe methods must come from the portal's own pages (Origin).
Bodies stream both ways; sockets relay frame by frame (kernels, terminals).
"""

from __future__ import annotations

import contextlib
import logging
from urllib.parse import urlsplit

import aiohttp
from asgiproxy.config import ProxyConfig
from asgiproxy.context import ProxyContext
from asgiproxy.proxies.http import convert_proxy_response_to_user_response, get_proxy_response
from asgiproxy.proxies.websocket import proxy_websocket
from channels.db import database_sync_to_async
from django.core.exceptions import PermissionDenied
from django.http import Http404
from starlette.responses import Response
from yarl import URL

from clusters.backends.base import BackendError
from clusters.backends.kind import ActionRefused, NotebookNotReady
from core.choices import JobState
from jobs import access

from . import notebook

logger = logging.getLogger(__name__)

# Never forwarded to the server: the portal's credentials, and what the proxy sets itself.
DROP_UPSTREAM = frozenset(
    [
        "cookie",
        "authorization",
        "proxy-authorization",
        "host",
        "origin",
        "referer",
        "connection",
        "upgrade",
        "keep-alive",
        "te",
        "trailer",
        "transfer-encoding",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-protocol",
        "x-forwarded-for",
        "x-forwarded-host",
        "x-forwarded-proto",
        "x-real-ip",
    ]
)
# Never passed back: the server's cookies (they would land on the portal's origin) and hop-by-hop headers.
DROP_DOWNSTREAM = frozenset(["set-cookie", "connection", "keep-alive", "transfer-encoding", "upgrade"])
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class Refused(Exception):
    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status, self.text = status, text


class ToNotebook(ProxyConfig):
    """Where each request goes: the address the access check put in the scope, the path unchanged."""

    # A URL, not asgiproxy's str: aiohttp takes either, and encoded=True keeps the escapes the browser sent
    def get_upstream_url_with_query(self, *, scope) -> URL:  # type: ignore[override]
        found = scope["gpulab.notebook"]
        raw = scope.get("raw_path") or scope["path"].encode()
        asked = (scope.get("query_string") or b"").decode("latin-1")
        query = "&".join(filter(None, [asked, notebook.upstream_query(found)]))
        target = found.url + raw.decode("latin-1") + ("?" + query if query else "")
        return URL(target, encoded=True)

    def get_upstream_http_options(self, *, scope, client_request, data) -> dict:
        options = super().get_upstream_http_options(scope=scope, client_request=client_request, data=data)
        return {**options, "ssl": notebook.tls_context(scope["gpulab.notebook"]) or True}

    def get_upstream_websocket_options(self, *, scope, client_ws) -> dict:
        options = super().get_upstream_websocket_options(scope=scope, client_ws=client_ws)
        return {**options, "ssl": notebook.tls_context(scope["gpulab.notebook"]) or True}

    def process_client_headers(self, *, scope, headers):
        found = scope["gpulab.notebook"]
        kept = {k: v for k, v in headers.items() if k.lower() not in DROP_UPSTREAM}
        if not _is_static(scope):  # pages come uncompressed, so the token can be taken out of them
            kept = {k: v for k, v in kept.items() if k.lower() != "accept-encoding"}
        return {**kept, "Host": urlsplit(found.url).netloc, **notebook.upstream_headers(found)}

    def process_upstream_headers(self, *, scope, proxy_response):
        found = scope["gpulab.notebook"]
        kept = {k: v for k, v in proxy_response.headers.items() if k.lower() not in DROP_DOWNSTREAM}
        if "Location" in kept or "location" in kept:  # a redirect a proxy on the way pointed at its own path
            name = "Location" if "Location" in kept else "location"
            kept[name] = notebook.unrewritten(kept[name].encode("latin-1"), found).decode("latin-1")
        return kept


def _is_static(scope) -> bool:
    """JupyterLab's bundles (/lab/static/…): compressed as the browser asks; they never hold the token."""
    return scope["path"].partition("/lab/")[2].startswith("static/")


async def proxy_http(*, context: ProxyContext, scope, receive, send) -> None:
    """asgiproxy's HTTP relay, except that a page keeps no copy of the token: JupyterLab writes its token into
    every page's config, which the browser must not see (the portal adds it to each request instead)."""
    upstream = await get_proxy_response(context=context, scope=scope, receive=receive)
    if not upstream.headers.get("content-type", "").startswith("text/html"):
        response = await convert_proxy_response_to_user_response(context=context, scope=scope, proxy_response=upstream)
        await response(scope, receive, send)
        return
    found = scope["gpulab.notebook"]
    body = notebook.unrewritten((await upstream.read()).replace(found.token.encode(), b""), found)
    headers = context.config.process_upstream_headers(scope=scope, proxy_response=upstream)
    headers = {k: v for k, v in headers.items() if k.lower() not in ("content-length", "content-encoding")}
    await Response(content=body, status_code=upstream.status, headers=headers)(scope, receive, send)


def _authorize(user, job_id):
    """The job and its server's address, or Refused with the status and words the browser gets."""
    try:
        job = access.get_job_notebook(user, job_id)
    except Http404:
        raise Refused(404, "No such job.") from None
    except PermissionDenied as exc:
        raise Refused(403, str(exc)) from None
    if not notebook.is_notebook(job):
        raise Refused(404, "This job has no JupyterLab.")
    if job.state != JobState.RUNNING:
        raise Refused(
            410,
            "This JupyterLab session has ended (the job is not running). Its notebooks stay in the "
            "job's run directory; launch the template again for a new session.",
        )
    try:
        found = notebook.address(job)
    except NotebookNotReady as exc:
        raise Refused(503, str(exc)) from None
    except (ActionRefused, BackendError) as exc:
        raise Refused(502, str(exc)) from None
    return job, found


def _same_origin(scope) -> bool:
    headers = dict(scope.get("headers") or [])
    origin, host = headers.get(b"origin"), headers.get(b"host")
    return origin is None or urlsplit(origin.decode("latin-1")).netloc.encode("latin-1") == host


class NotebookProxy:
    def __init__(self):
        self.context = ProxyContext(ToNotebook(), max_concurrency=256)

    async def __call__(self, scope, receive, send):
        job_id = scope["url_route"]["kwargs"]["job_id"]
        try:
            if scope["type"] == "http" and scope["method"] in UNSAFE and not _same_origin(scope):
                raise Refused(403, "Requests to JupyterLab must come from the portal's own pages.")
            job, found = await database_sync_to_async(_authorize)(scope["user"], job_id)
        except Refused as refused:
            await _refuse(scope, send, refused)
            return
        scope = {**scope, "gpulab.notebook": found}
        try:
            if scope["type"] == "websocket":
                await proxy_websocket(context=self.context, scope=scope, receive=receive, send=send)
            else:
                await proxy_http(context=self.context, scope=scope, receive=receive, send=send)
        except aiohttp.ClientConnectionError as exc:  # the server moved or stopped: find it again next time
            notebook.forget(job.pk)
            logger.info("notebook of job %s did not answer at %s: %s", job.pk, found.url, exc)
            await _refuse(
                scope,
                send,
                Refused(
                    502,
                    "JupyterLab is not answering. If the job still runs, reload "
                    "in a few seconds; if it keeps failing, relaunch the session.",
                ),
            )


async def _refuse(scope, send, refused: Refused) -> None:
    with contextlib.suppress(RuntimeError, OSError):  # a response already under way cannot be replaced
        await _send_refusal(scope, send, refused)


async def _send_refusal(scope, send, refused: Refused) -> None:
    body = refused.text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    if refused.status == 503:
        headers.append((b"retry-after", b"3"))
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": refused.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
    elif "websocket.http.response" in scope.get("extensions", {}):  # the handshake answered with the status
        await send({"type": "websocket.http.response.start", "status": refused.status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 4000 + refused.status})


notebook_proxy = NotebookProxy()
