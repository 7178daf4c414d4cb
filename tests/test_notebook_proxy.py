"""The JupyterLab proxy's own rules (sessions/notebook_proxy.py), driven as the ASGI app it is against a real HTTP
server standing for JupyterLab: a path that leaves the session's prefix (`..`, `%2e%2e`, backslashes, encoded
slashes) is 404 before anything is asked or sent; what the server gets is the normalized path; what the browser gets
carries none of the headers that would widen what the server's pages may do on the portal's origin."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from asgiref.sync import async_to_sync

from clusters.backends.kind import NotebookAddress
from sessions import notebook_proxy
from sessions.notebook_proxy import NotebookProxy, Refused, upstream_path

JOB_ID = "4c9f2e8c-e6af-4fbc-85ad-8dcd5ff741e2"  # fixed: parametrized test ids must match in every xdist worker
PREFIX = f"/jobs/{JOB_ID}/lab/"
TOKEN = "t0ken-" + "y" * 40


def scope_for(raw_path: bytes, method: str = "GET") -> dict:
    return {
        "type": "http",
        "method": method,
        "path": raw_path.decode("latin-1"),
        "raw_path": raw_path,
        "query_string": b"",
        "headers": [(b"host", b"portal.test")],
        "url_route": {"kwargs": {"job_id": JOB_ID}},
        "user": SimpleNamespace(pk=1),
    }


@pytest.mark.parametrize(
    "raw, forwarded",
    [
        (PREFIX + "lab", PREFIX + "lab"),
        (PREFIX + "api//status", PREFIX + "api/status"),
        (PREFIX + "api/./contents/", PREFIX + "api/contents/"),
        (PREFIX + "api/contents/a/../b.ipynb", PREFIX + "api/contents/b.ipynb"),
        (PREFIX + "api/contents/my%20notes%3F.ipynb", PREFIX + "api/contents/my%20notes%3F.ipynb"),
        (PREFIX + "api/contents/%C3%A9t%C3%A9", PREFIX + "api/contents/%C3%A9t%C3%A9"),
        (PREFIX + "files/%252e%252e/x", PREFIX + "files/%252e%252e/x"),  # a name holding "%2e": decoded once only
    ],
)
def test_a_path_under_the_sessions_prefix_reaches_the_server_normalized(raw, forwarded):
    assert upstream_path(scope_for(raw.encode()), JOB_ID) == forwarded


@pytest.mark.parametrize(
    "raw",
    [
        PREFIX + "../../api/v1/jobs/",
        PREFIX + "..",
        PREFIX + "%2e%2e/%2e%2e/admin/",
        PREFIX + "%2E%2E%2F%2E%2E%2Fapi/status",
        PREFIX + "..%2f..%2f..%2fapi/v1/namespaces/kube-system/secrets",
        PREFIX + "api/..%5c..%5c..%5cx",
        PREFIX + "..\\..\\x",
        PREFIX + "a/../../../x",
        PREFIX[:-1] + "-other/x",
    ],
)
def test_a_path_leaving_the_sessions_prefix_is_404(raw):
    with pytest.raises(Refused) as refused:
        upstream_path(scope_for(raw.encode()), JOB_ID)
    assert refused.value.status == 404


@pytest.fixture
def jupyter():
    """A server that records the path and headers it is asked with and answers with headers a hostile server sends."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, dict(self.headers)))
            body = b'{"ok": true}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in HOSTILE_HEADERS:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield SimpleNamespace(url=f"http://127.0.0.1:{server.server_address[1]}", seen=seen)
    server.shutdown()


HOSTILE_HEADERS = [
    ("Service-Worker-Allowed", "/"),
    ("Access-Control-Allow-Origin", "*"),
    ("Access-Control-Allow-Credentials", "true"),
    ("Strict-Transport-Security", "max-age=63072000; includeSubDomains"),
    ("Clear-Site-Data", '"cookies"'),
    ("Set-Cookie", "portal=owned; Path=/"),
    ("X-Accel-Redirect", "/internal/"),
    ("Connection", "X-Hop"),
    ("X-Hop", "1"),
    ("X-Kept", "yes"),
]


def call(app, scope) -> tuple[int, dict[str, str], bytes]:
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    async_to_sync(app)(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    return start["status"], headers, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def test_the_browser_gets_none_of_the_headers_that_widen_the_servers_reach(db, monkeypatch, jupyter):
    found = NotebookAddress(url=jupyter.url, token=TOKEN)
    monkeypatch.setattr(notebook_proxy, "_authorize", lambda user, job_id: (SimpleNamespace(pk=job_id), found))
    status, headers, body = call(NotebookProxy(), scope_for((PREFIX + "api//./status").encode()))
    assert status == 200 and body == b'{"ok": true}'
    for name in ("service-worker-allowed", "access-control-allow-origin", "access-control-allow-credentials"):
        assert name not in headers
    for name in ("strict-transport-security", "clear-site-data", "set-cookie", "x-accel-redirect", "x-hop"):
        assert name not in headers
    assert headers["x-kept"] == "yes"
    path, sent_headers = jupyter.seen[0]
    assert path == PREFIX + "api/status" and sent_headers["Authorization"] == f"token {TOKEN}"


def test_a_traversal_is_404_before_the_access_check_or_the_server(db, monkeypatch, jupyter):
    asked = []
    monkeypatch.setattr(notebook_proxy, "_authorize", lambda user, job_id: asked.append(job_id))
    status, _, _ = call(NotebookProxy(), scope_for((PREFIX + "%2e%2e/%2e%2e/%2e%2e/api/v1/jobs/").encode()))
    assert status == 404 and asked == [] and jupyter.seen == []


# -- a job's dashboard (KubeRay's Ray dashboard): the same proxy, serving from the dashboard's root ---------------
DASHBOARD = f"/jobs/{JOB_ID}/dashboard/"


@pytest.mark.parametrize(
    "raw, forwarded",
    [
        (DASHBOARD, "/"),
        (DASHBOARD + "api/jobs/", "/api/jobs/"),
        (DASHBOARD + "/evil.example/x", "/evil.example/x"),
        (DASHBOARD + "http://169.254.169.254/latest", "/http:/169.254.169.254/latest"),
        (DASHBOARD + "a/../logs/%2e/x", "/logs/x"),
    ],
)
def test_a_dashboard_path_reaches_the_dashboards_root_normalized(raw, forwarded):
    scope = scope_for(raw.encode())
    assert upstream_path(scope, JOB_ID, DASHBOARD, keep_prefix=False) == forwarded


@pytest.mark.parametrize(
    "raw",
    [
        DASHBOARD + "..",
        DASHBOARD + "../lab/api/status",
        DASHBOARD + "%2e%2e/%2e%2e/api/v1/namespaces/kube-system/secrets",
        DASHBOARD + "..%2f..%2f..%2fadmin/",
        DASHBOARD + "..\\..\\x",
        DASHBOARD[:-1] + "-other/x",
    ],
)
def test_a_path_leaving_the_dashboards_prefix_is_404(raw):
    with pytest.raises(Refused) as refused:
        upstream_path(scope_for(raw.encode()), JOB_ID, DASHBOARD, keep_prefix=False)
    assert refused.value.status == 404


@pytest.fixture
def ray_head():
    """A dashboard behind a proxy that rewrites absolute links and Location to its own path, as the API server does."""
    seen = []
    proxy_path = "/api/v1/namespaces/ns/services/c-head-svc:8265/proxy"

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, dict(self.headers)))
            if self.path == f"{proxy_path}/old":
                self.send_response(302)
                self.send_header("Location", f"{proxy_path}/new")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = f'<a href="{proxy_path}/logs">logs</a><script src="./static/main.js"></script>'.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}{proxy_path}"
    yield SimpleNamespace(
        address=NotebookAddress(url=url, token="", token_in_query=True, rewritten_prefix=proxy_path), seen=seen
    )
    server.shutdown()


def test_the_dashboard_gets_the_rest_of_the_path_and_its_links_come_back_under_the_portals_prefix(
    db, monkeypatch, ray_head
):
    from sessions.notebook_proxy import DashboardProxy

    monkeypatch.setattr(
        notebook_proxy, "_authorize_dashboard", lambda user, job_id: (SimpleNamespace(pk=job_id), ray_head.address)
    )
    scope = scope_for((DASHBOARD + "jobs/").encode())
    scope["user"] = SimpleNamespace(pk=1, is_authenticated=True)
    status, headers, body = call(DashboardProxy(), scope)
    assert status == 200 and f'href="{DASHBOARD}logs"'.encode() in body and b'src="./static/main.js"' in body
    path, sent = ray_head.seen[-1]
    assert path.endswith("/proxy/jobs/") and "token" not in path and "Authorization" not in sent
    scope = scope_for((DASHBOARD + "old").encode())
    scope["user"] = SimpleNamespace(pk=1, is_authenticated=True)
    status, headers, _ = call(DashboardProxy(), scope)
    assert status == 302 and headers["location"] == f"{DASHBOARD}new"


def test_nobody_signed_in_is_sent_to_sign_in_before_anything_is_asked(db, monkeypatch, ray_head):
    from sessions.notebook_proxy import DashboardProxy

    asked = []
    monkeypatch.setattr(notebook_proxy, "_authorize_dashboard", lambda user, job_id: asked.append(job_id))
    scope = scope_for((DASHBOARD + "api/jobs/").encode())
    scope["user"] = SimpleNamespace(pk=None, is_authenticated=False)
    status, headers, _ = call(DashboardProxy(), scope)
    assert status == 302 and headers["location"] == f"/login/?next={DASHBOARD}api/jobs/"
    assert asked == [] and ray_head.seen == []
