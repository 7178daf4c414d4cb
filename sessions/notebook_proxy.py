"""The JupyterLab proxy: /jobs/<id>/lab/… (HTTP and WebSockets) to the job's notebook server, through asgiproxy; and
the same proxy for a job's dashboard (KubeRay's Ray dashboard): /jobs/<id>/dashboard/… to the dashboard's root.

Invariant: every request and every socket is authorized by the access helper (jobs/access.get_job_notebook, or
get_job_dashboard: the job's owner alone, both) before anything reaches the server: another student's job answers
404, the same as a missing one, on HTTP and on the WebSocket handshake. The path is normalized first and must stay
under the job's prefix, so no request reaches anything but that job's server. The server's token is added here
(Authorization header) and never sent to the browser; the browser's portal cookies and credentials are never sent
to the server (it runs the student's code), and the server's cookies never reach the browser. Unsafe methods must
come from the portal's own pages (Origin). Bodies stream both ways; sockets relay frame by frame (kernels,
terminals). A browser nobody signed in to is sent to sign in to a dashboard; JupyterLab answers it 404.
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
from urllib.parse import quote, quote_from_bytes, unquote_to_bytes, urlsplit

import aiohttp
from asgiproxy.config import ProxyConfig
from asgiproxy.context import ProxyContext
from asgiproxy.proxies.http import convert_proxy_response_to_user_response, get_proxy_response
from asgiproxy.proxies.websocket import proxy_websocket
from channels.db import database_sync_to_async
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import resolve_url
from starlette.responses import Response
from yarl import URL

from clusters.backends.base import BackendError
from clusters.backends.kind import ActionRefused, NotebookNotReady
from core.choices import JobState
from jobs import access

from . import dashboard, notebook

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
# Never passed back: the server's cookies (they would land on the portal's origin), hop-by-hop headers, and what
# would widen what the server's pages may do on the portal's origin (a service worker for the whole site, other
# origins reading answers, HSTS or site-data clearing for the portal, a web server's internal redirects).
DROP_DOWNSTREAM = frozenset(
    [
        "set-cookie",
        "set-cookie2",
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "service-worker-allowed",
        "access-control-allow-origin",
        "access-control-allow-credentials",
        "access-control-allow-headers",
        "access-control-allow-methods",
        "access-control-allow-private-network",
        "access-control-expose-headers",
        "access-control-max-age",
        "timing-allow-origin",
        "strict-transport-security",
        "public-key-pins",
        "public-key-pins-report-only",
        "clear-site-data",
        "alt-svc",
        "x-accel-redirect",
        "x-sendfile",
    ]
)
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
PATH_SAFE = "/!$&'()*+,;=:@~"  # RFC 3986's path characters, kept as they are when a path is escaped again


class Refused(Exception):
    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status, self.text = status, text


def upstream_path(scope, job_id, prefix: str | None = None, *, keep_prefix: bool = True) -> str:
    """The request's path as the server gets it: percent-escapes decoded, backslashes read as slashes, `.`, `..` and
    doubled slashes resolved, then each part escaped again; Refused(404) when the result leaves the session's prefix
    (a `..` or `%2e%2e` reaching past it toward the portal's, or a proxy's, other paths). `prefix`: the session's
    (JupyterLab's by default); keep_prefix=False: the server serves from its root, which gets the rest after it."""
    prefix = prefix or notebook.prefix(job_id)
    raw = scope.get("raw_path") or scope["path"].encode()
    decoded = unquote_to_bytes(raw).replace(b"\\", b"/")
    normal = posixpath.normpath(decoded)
    if decoded.endswith(b"/") and not normal.endswith(b"/"):
        normal += b"/"
    if not normal.startswith(prefix.encode()):
        raise Refused(404, "No such page.")
    if not keep_prefix:
        normal = b"/" + normal[len(prefix) :]
    return "/".join(quote_from_bytes(part, safe=PATH_SAFE) for part in normal.split(b"/"))


class ToNotebook(ProxyConfig):
    """Where each request goes: the address the access check put in the scope, the path as upstream_path made it."""

    # A URL, not asgiproxy's str: aiohttp takes either, and encoded=True keeps the escapes the browser sent
    def get_upstream_url_with_query(self, *, scope) -> URL:  # type: ignore[override]
        found = scope["gpulab.notebook"]
        asked = (scope.get("query_string") or b"").decode("latin-1")
        query = "&".join(filter(None, [asked, notebook.upstream_query(found)]))
        target = found.url + scope["gpulab.path"] + ("?" + query if query else "")
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
        if not scope["gpulab.compressed"]:  # pages come uncompressed, so the token can be taken out of them
            kept = {k: v for k, v in kept.items() if k.lower() != "accept-encoding"}
        return {**kept, "Host": urlsplit(found.url).netloc, **notebook.upstream_headers(found)}

    def process_upstream_headers(self, *, scope, proxy_response):
        found = scope["gpulab.notebook"]
        named = {n.strip().lower() for v in proxy_response.headers.getall("Connection", []) for n in v.split(",")}
        dropped = DROP_DOWNSTREAM | named  # and what the server's Connection header names as hop-by-hop
        kept = {k: v for k, v in proxy_response.headers.items() if k.lower() not in dropped}
        if "Location" in kept or "location" in kept:  # a redirect a proxy on the way pointed at its own path
            name = "Location" if "Location" in kept else "location"
            location = notebook.unrewritten(kept[name].encode("latin-1"), found, scope["gpulab.served_at"])
            kept[name] = location.decode("latin-1")
        return kept


def _is_static(path: str) -> bool:
    """JupyterLab's bundles (/lab/static/…): compressed as the browser asks; they never hold the token."""
    return path.partition("/lab/")[2].startswith("static/")


async def proxy_http(*, context: ProxyContext, scope, receive, send) -> None:
    """asgiproxy's HTTP relay, except that a page keeps no copy of the token: JupyterLab writes its token into
    every page's config, which the browser must not see (the portal adds it to each request instead)."""
    upstream = await get_proxy_response(context=context, scope=scope, receive=receive)
    if not upstream.headers.get("content-type", "").startswith("text/html"):
        response = await convert_proxy_response_to_user_response(context=context, scope=scope, proxy_response=upstream)
        await response(scope, receive, send)
        return
    found = scope["gpulab.notebook"]
    body = await upstream.read()
    if found.token:
        body = body.replace(found.token.encode(), b"")
    body = notebook.unrewritten(body, found, scope["gpulab.served_at"])
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


def _authorize_dashboard(user, job_id):
    """The job and its dashboard's address, or Refused with the status and words the browser gets."""
    try:
        job = access.get_job_dashboard(user, job_id)
    except Http404:
        raise Refused(404, "No such job.") from None
    except PermissionDenied as exc:
        raise Refused(403, str(exc)) from None
    name = dashboard.name_of(job)
    if not name:
        raise Refused(404, "This job has no dashboard.")
    if job.state != JobState.RUNNING:
        raise Refused(410, f"The job is not running, so its {name} is gone with its cluster.")
    try:
        found = dashboard.address(job)
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
    """JupyterLab under /jobs/<id>/lab/: the server serves under that same path (its base_url), holds a token, and
    its static bundles come compressed."""

    what = "JupyterLab"
    keep_prefix = True
    to_login = False

    def __init__(self):
        self.context = ProxyContext(ToNotebook(), max_concurrency=256)

    def prefix(self, job_id) -> str:
        return notebook.prefix(job_id)

    def authorize(self, user, job_id):
        return _authorize(user, job_id)

    def forget(self, job_id) -> None:
        notebook.forget(job_id)

    def compressed(self, path: str) -> bool:
        return _is_static(path)

    def not_answering(self) -> str:
        return (
            "JupyterLab is not answering. If the job still runs, reload in a few seconds; if it keeps failing, "
            "relaunch the session."
        )

    async def __call__(self, scope, receive, send):
        job_id = scope["url_route"]["kwargs"]["job_id"]
        try:
            if scope["type"] == "http" and scope["method"] in UNSAFE and not _same_origin(scope):
                raise Refused(403, f"Requests to the {self.what} must come from the portal's own pages.")
            path = upstream_path(scope, job_id, self.prefix(job_id), keep_prefix=self.keep_prefix)
            if self.to_login and scope["type"] == "http" and not getattr(scope.get("user"), "is_authenticated", 0):
                await _to_login(scope, send)
                return
            job, found = await database_sync_to_async(self.authorize)(scope["user"], job_id)
        except Refused as refused:
            await _refuse(scope, send, refused)
            return
        served_at = "/" if self.keep_prefix else self.prefix(job_id)
        scope = {
            **scope,
            "gpulab.notebook": found,
            "gpulab.path": path,
            "gpulab.served_at": served_at,
            "gpulab.compressed": self.compressed(path),
        }
        try:
            if scope["type"] == "websocket":
                await proxy_websocket(context=self.context, scope=scope, receive=receive, send=send)
            else:
                await proxy_http(context=self.context, scope=scope, receive=receive, send=send)
        except aiohttp.ClientConnectionError as exc:  # the server moved or stopped: find it again next time
            self.forget(job.pk)
            logger.info("%s of job %s did not answer at %s: %s", self.what, job.pk, found.url, exc)
            await _refuse(scope, send, Refused(502, self.not_answering()))


class DashboardProxy(NotebookProxy):
    """A job's dashboard (KubeRay's Ray dashboard) under /jobs/<id>/dashboard/: the dashboard serves from its own root
    (the proxy takes the prefix off), has no token, and pages are read uncompressed to put the prefix back into links
    a proxy on the way rewrote. Nobody signed in: sent to sign in."""

    what = "dashboard"
    keep_prefix = False
    to_login = True

    def prefix(self, job_id) -> str:
        return dashboard.prefix(job_id)

    def authorize(self, user, job_id):
        return _authorize_dashboard(user, job_id)

    def forget(self, job_id) -> None:
        dashboard.forget(job_id)

    def compressed(self, path: str) -> bool:
        return False

    def not_answering(self) -> str:
        return "The dashboard is not answering. If the job still runs, reload in a few seconds."


async def _to_login(scope, send) -> None:
    """A browser nobody signed in to: to the login page, and back here after it."""
    raw = scope.get("raw_path") or scope["path"].encode()
    query = scope.get("query_string") or b""
    back = raw + (b"?" + query if query else b"")
    location = f"{resolve_url(settings.LOGIN_URL)}?next={quote(back.decode('latin-1'), safe='/')}"
    headers = [(b"location", location.encode("latin-1")), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 302, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


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
dashboard_proxy = DashboardProxy()
