"""Posting to a webhook at the address the portal checked, not at whatever its name resolves to a moment later.

``requests`` would look the host up again when it connects; a name that answered a public address to the check can
answer 127.0.0.1 to that second lookup (DNS rebinding). So the URL keeps its host name (the Host header, TLS SNI
and certificate verification all use the name), and the adapter below opens the connection to one checked address
(``HTTPAdapter.build_connection_pool_key_attributes``, the hook requests documents for this). Addresses are tried
in the resolver's order, the next only when the connection could not be opened (nothing was sent). Proxies from the
environment are not used: a proxy would resolve the name itself.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ConnectTimeoutError

from .webhook_urls import Target


class PinnedAddressAdapter(HTTPAdapter):
    """Connects to ``address`` whatever the request's host; TLS still sends and verifies the request's host name."""

    def __init__(self, address: str) -> None:
        super().__init__(max_retries=0)
        self.address = f"[{address}]" if ":" in address else address

    def build_connection_pool_key_attributes(self, request, verify, cert=None):
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        if host_params["scheme"] == "https":
            # SNI and the certificate's name check. The stub types pool_kwargs as the keys requests sets itself;
            # urllib3 takes any HTTPSConnectionPool argument there, server_hostname among them.
            pool_kwargs["server_hostname"] = host_params["host"]  # type: ignore[typeddict-unknown-key]
        host_params["host"] = self.address
        return host_params, pool_kwargs

    def send(self, request, *args, **kwargs):
        request.headers["Host"] = urlsplit(request.url).netloc  # else urllib3 would name the address
        return super().send(request, *args, **kwargs)


def post(target: Target, payload: dict, *, timeout: float, verify: bool | str = True) -> requests.Response:
    """POST ``payload`` as JSON to the target's URL, connecting only to its checked addresses."""
    last: requests.ConnectionError | None = None
    for address in target.addresses:
        with requests.Session() as session:
            session.trust_env = False
            session.mount("http://", PinnedAddressAdapter(address))
            session.mount("https://", PinnedAddressAdapter(address))
            try:
                return session.post(target.url, json=payload, timeout=timeout, allow_redirects=False, verify=verify)
            except requests.ConnectionError as exc:
                if not _not_connected(exc):
                    raise
                last = exc
    assert last is not None  # a Target has at least one address
    raise last


def _not_connected(exc: requests.ConnectionError) -> bool:
    """Whether the connection was never opened (refused, unreachable, timed out connecting): nothing was sent."""
    reason = getattr(exc.args[0] if exc.args else None, "reason", None)
    return isinstance(reason, ConnectTimeoutError)  # urllib3's NewConnectionError is a ConnectTimeoutError too
