"""Which pages may open the portal's WebSockets: the Origin must be the handshake's own scheme, host and port (or a
CSRF-trusted origin), so another server on the portal's host cannot open a socket with the visitor's cookies."""

from __future__ import annotations

import asyncio
import os

import pytest
from asgiref.testing import ApplicationCommunicator
from channels.db import database_sync_to_async
from django.db import connections

from portal.websocket_origin import REFUSED, SameOriginValidator


async def accepts(scope, receive, send):
    """A socket route that accepts every handshake it is given (no database, unlike a Channels consumer)."""
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    await receive()  # websocket.disconnect


async def connect(app, path: str, headers: dict[str, str], scheme: str = "ws") -> tuple[bool, int | None]:
    """The browser's handshake as uvicorn passes it on (channels.testing needs daphne, which the portal does not
    use): (accepted, close code)."""
    scope = {"type": "websocket", "path": path, "scheme": scheme, "query_string": b"", "subprotocols": []}
    scope["headers"] = [(name.encode(), value.encode()) for name, value in headers.items()]
    communicator = ApplicationCommunicator(app, scope)
    await communicator.send_input({"type": "websocket.connect"})
    answer = await communicator.receive_output(timeout=10)
    await communicator.send_input({"type": "websocket.disconnect", "code": 1000})
    await communicator.wait(timeout=5)
    return answer["type"] == "websocket.accept", answer.get("code")


def handshake(headers: dict[str, str], scheme: str = "ws") -> tuple[bool, int | None]:
    return asyncio.run(connect(SameOriginValidator(accepts), "/ws/x/", headers, scheme))


def test_the_page_s_own_origin_may_open_a_socket():
    assert handshake({"host": "localhost:8000", "origin": "http://localhost:8000"}) == (True, None)


def test_another_port_on_the_same_host_is_refused():
    assert handshake({"host": "localhost:8000", "origin": "http://localhost:9999"}) == (False, REFUSED)


def test_another_scheme_on_the_same_host_and_port_is_refused():
    assert handshake({"host": "localhost:8000", "origin": "https://localhost:8000"})[0] is False
    assert handshake({"host": "localhost", "origin": "http://localhost"}, scheme="wss")[0] is False


def test_default_ports_are_the_same_origin_written_or_not():
    assert handshake({"host": "localhost", "origin": "https://localhost:443"}, scheme="wss")[0] is True
    assert handshake({"host": "localhost:80", "origin": "http://localhost"})[0] is True


@pytest.mark.parametrize(
    "origin",
    ["http://evil.example", "null", "http://localhost.evil.example:8000", "file://", "http://localhost:8000/x"],
)
def test_other_sites_and_odd_origins_are_refused(origin):
    assert handshake({"host": "localhost:8000", "origin": origin})[0] is False


def test_a_host_outside_allowed_hosts_is_refused_even_when_the_origin_matches_it():
    assert handshake({"host": "evil.example", "origin": "http://evil.example"})[0] is False


def test_a_missing_origin_is_refused_as_before_unless_every_host_is_allowed(settings):
    assert handshake({"host": "localhost:8000"}) == (False, REFUSED)
    settings.ALLOWED_HOSTS = ["*"]
    assert handshake({"host": "localhost:8000"})[0] is True


def test_behind_a_tls_proxy_the_forwarded_scheme_decides(settings):
    settings.ALLOWED_HOSTS = ["gpulab.example.edu"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proxied = {"host": "gpulab.example.edu", "x-forwarded-proto": "https"}
    assert handshake({**proxied, "origin": "https://gpulab.example.edu"})[0] is True
    assert handshake({**proxied, "origin": "http://gpulab.example.edu"})[0] is False


def test_a_csrf_trusted_origin_may_open_a_socket(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://portal.example.edu", "https://*.lab.example.edu"]
    assert handshake({"host": "localhost:8000", "origin": "https://portal.example.edu"})[0] is True
    assert handshake({"host": "localhost:8000", "origin": "https://gpu.lab.example.edu"})[0] is True
    assert handshake({"host": "localhost:8000", "origin": "http://gpu.lab.example.edu"})[0] is False


@pytest.mark.django_db(transaction=True)
def test_the_portal_s_socket_routes_check_the_whole_origin(monkeypatch, admin_user, cluster):
    """portal.asgi: a page on another port is refused before any consumer runs; the portal's own page reaches the
    consumer, which answers the anonymous visitor with its 404 (4404)."""
    from telemetry.models import Node

    monkeypatch.setenv("GPULAB_ASGI", os.environ.get("GPULAB_ASGI", "0"))  # portal.asgi sets it; put it back after
    from portal.asgi import application

    node = Node.objects.create(cluster=cluster, name="gpu01", gpus=1)

    async def both():
        path = f"/ws/nodes/{node.pk}/"
        answers = []
        for origin in ("http://localhost:9999", "http://localhost:8000"):
            answers.append(await connect(application, path, {"host": "localhost:8000", "origin": origin}))
        await database_sync_to_async(connections.close_all)()
        return answers

    assert asyncio.run(both()) == [(False, REFUSED), (False, 4404)]
