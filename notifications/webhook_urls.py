"""Which webhook URLs the portal will post to.

Only http(s) URLs whose host resolves to public addresses: a URL naming loopback, link-local (cloud metadata),
private or otherwise reserved addresses would let an instructor make the portal reach inside its own network.
An admin may allow networks by name (NOTIFY_WEBHOOK_ALLOWED_NETWORKS, e.g. 10.20.0.0/16 for a campus Mattermost).
The check runs when the URL is saved and again before each post, since a name may resolve elsewhere later.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings


class UnsafeURL(ValueError):
    """The URL is refused; the message says why and what to do, for the instructor."""


def check(url: str) -> str:
    """The URL, if the portal may post to it; UnsafeURL otherwise."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsafeURL("A webhook URL starts with https:// (or http://) and names a host.")
    if parts.username or parts.password:
        raise UnsafeURL("Put no user name or password in the URL; webhook URLs carry their secret in the path.")
    for address in _addresses(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)):
        if not _allowed(address):
            where = parts.hostname if address == parts.hostname else f"{parts.hostname} ({address})"
            raise UnsafeURL(
                f"{where} is a private, loopback or link-local address; the portal posts only to public addresses. "
                "Ask an admin if your chat server is inside the campus network."
            )
    return url.strip()


def _addresses(host: str, port: int) -> set[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise UnsafeURL(f"{host} cannot be found; check the webhook URL.") from None
    return {str(info[4][0]) for info in infos}


def _allowed(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if ip.is_multicast or ip.is_unspecified:
        return False
    if any(ip in ipaddress.ip_network(net, strict=False) for net in settings.NOTIFY_WEBHOOK_ALLOWED_NETWORKS):
        return True
    return ip.is_global
