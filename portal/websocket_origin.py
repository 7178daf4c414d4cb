"""Which pages may open the portal's WebSockets: its own origin (scheme, host and port), as Django's CSRF check
decides for a form.

Session cookies authenticate sockets, and a browser sends them whichever page opens the socket; the Origin header
says which page that is. Channels' ``AllowedHostsOriginValidator`` compares the host only, so a page served by
anything else on the same host (``http://localhost:9999``, a student's JupyterLab or web server on another port)
could open a socket as the person viewing it. Here the Origin must equal the handshake's own origin: its scheme
(``wss`` is https; behind a TLS proxy, ``SECURE_PROXY_SSL_HEADER`` as for Django's requests), its Host header (one
of ``ALLOWED_HOSTS``) and port, default ports made explicit. An origin listed in ``CSRF_TRUSTED_ORIGINS`` (also
``https://*.example.edu``) is accepted, as Django accepts it for forms. A handshake without an Origin is refused,
as before, unless ``ALLOWED_HOSTS`` holds ``*``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

DEFAULT_PORTS = {"http": 80, "https": 443}
REFUSED = 4403  # the close code of a refused handshake (the browser sees HTTP 403)

Origin = tuple[str, str, int]


class SameOriginValidator:
    """ASGI middleware for WebSocket routes: refuses the handshake unless the Origin is the portal's own."""

    def __init__(self, application) -> None:
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            raise ValueError("SameOriginValidator guards WebSocket connections only.")
        if allowed(scope):
            return await self.application(scope, receive, send)
        message = await receive()  # websocket.connect
        if message["type"] == "websocket.connect":
            await send({"type": "websocket.close", "code": REFUSED})


def allowed(scope) -> bool:
    """Whether the page that opens this socket is one of the portal's own (the Origin rule above)."""
    headers = _headers(scope)
    origin = headers.get("origin")
    if origin is None:
        return "*" in settings.ALLOWED_HOSTS
    parsed = _origin(origin)
    if parsed is None:
        return False
    own = own_origin(scope, headers)
    return parsed == own or _trusted(origin, parsed)


def own_origin(scope, headers: dict[str, str] | None = None) -> Origin | None:
    """The handshake's own origin (scheme, host, port), or None when its Host is not one of ALLOWED_HOSTS."""
    headers = _headers(scope) if headers is None else headers
    host = headers.get("host")
    if host is None and scope.get("server"):
        name, port = scope["server"]
        host = f"[{name}]:{port}" if ":" in name else f"{name}:{port}"
    domain, port = split_domain_port(host or "")
    if not domain or not validate_host(domain, _allowed_hosts()):
        return None
    scheme = _scheme(scope, headers)
    return _origin(f"{scheme}://{host}")


def _allowed_hosts() -> list[str]:
    if settings.DEBUG and not settings.ALLOWED_HOSTS:
        return [".localhost", "127.0.0.1", "[::1]"]  # what Django's request.get_host() allows then
    return settings.ALLOWED_HOSTS


def _scheme(scope, headers: dict[str, str]) -> str:
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy:
        header, secure_value = proxy
        value = headers.get(header.removeprefix("HTTP_").replace("_", "-").lower())
        if value is not None:
            return "https" if value.split(",", 1)[0].strip() == secure_value else "http"
    return "https" if scope.get("scheme") in ("wss", "https") else "http"


def _origin(text: str) -> Origin | None:
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    return parts.scheme, parts.hostname.lower(), port or DEFAULT_PORTS[parts.scheme]


def _trusted(text: str, parsed: Origin) -> bool:
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        if "*" in trusted:
            scheme, _, pattern = trusted.partition("://")
            if scheme == parsed[0] and is_same_domain(urlsplit(text.strip()).netloc.lower(), pattern[1:].lower()):
                return True
        elif _origin(trusted) == parsed:
            return True
    return False


def _headers(scope) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers") or []}
