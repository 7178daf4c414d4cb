"""Which webhook URLs the portal will post to, and the addresses it may post them to.

Only http(s) URLs whose host resolves to public addresses: a URL naming loopback, link-local (cloud metadata),
private or otherwise reserved addresses would let an instructor make the portal reach inside its own network.
An IPv6 address that carries an IPv4 one (IPv4-mapped ``::ffff:127.0.0.1``, IPv4-compatible ``::127.0.0.1``,
NAT64 ``64:ff9b::7f00:1``, 6to4 ``2002:7f00:1::``, Teredo ``2001:0::/32``) is judged by the IPv4 address it reaches;
the local-use NAT64 prefix (64:ff9b:1::/48), whose embedding the portal cannot know, is refused.
An admin may allow networks by name (NOTIFY_WEBHOOK_ALLOWED_NETWORKS, e.g. 10.20.0.0/16 for a campus Mattermost).

The check runs when the URL is saved and again before each post, since a name may resolve elsewhere later. Before
a post the name is resolved once: ``resolve()`` returns the addresses it checked, and the post connects to those
(notifications/webhook_post.py), never asking DNS again, so a name that answers a public address to the check and
a private one to the connection (DNS rebinding) reaches nothing inside.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052: the IPv4 address is the last 32 bits
NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: where the IPv4 address sits is local knowledge
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated ::a.b.c.d (:: and ::1 are judged as themselves)


class UnsafeURL(ValueError):
    """The URL is refused; the message says why and what to do, for the instructor."""


@dataclass(frozen=True)
class Target:
    """A checked webhook URL and every address its host resolved to, all of them allowed, in the resolver's order."""

    url: str
    hostname: str
    port: int
    addresses: tuple[str, ...]


def check(url: str) -> str:
    """The URL, if the portal may post to it; UnsafeURL otherwise."""
    return resolve(url).url


def resolve(url: str) -> Target:
    """The URL and the addresses the portal may post it to (all of them checked); UnsafeURL if any is refused."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsafeURL("A webhook URL starts with https:// (or http://) and names a host.")
    if parts.username or parts.password:
        raise UnsafeURL("Put no user name or password in the URL; webhook URLs carry their secret in the path.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UnsafeURL("The port in the webhook URL is not a number from 1 to 65535.") from None
    addresses = _addresses(parts.hostname, port)
    for address in addresses:
        if not allowed(address):
            where = parts.hostname if address == parts.hostname else f"{parts.hostname} ({address})"
            raise UnsafeURL(
                f"{where} is a private, loopback or link-local address; the portal posts only to public addresses. "
                "Ask an admin if your chat server is inside the campus network."
            )
    return Target(url=url, hostname=parts.hostname, port=port, addresses=addresses)


def _addresses(host: str, port: int) -> tuple[str, ...]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise UnsafeURL(f"{host} cannot be found; check the webhook URL.") from None
    found = tuple(dict.fromkeys(str(info[4][0]) for info in infos))  # in the resolver's order, once each
    if not found:
        raise UnsafeURL(f"{host} cannot be found; check the webhook URL.")
    return found


def allowed(address: str) -> bool:
    """Whether the portal may connect to this address: public, or in a network an admin allowed."""
    ip = ipaddress.ip_address(address.split("%")[0])
    inner = embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else []
    if _admin_allows(ip) or (inner and all(_admin_allows(v4) for v4 in inner)):
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip in NAT64_LOCAL_USE:
        return False
    return all(_public(v4) for v4 in inner) if inner else _public(ip)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address reaches or carries (a Teredo address: its server and its client)."""
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    if ip in NAT64_WELL_KNOWN or (ip in IPV4_COMPATIBLE and int(ip) > 1):
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    return []


def _public(ip: IPAddress) -> bool:
    return ip.is_global and not ip.is_multicast and not ip.is_unspecified


def _admin_allows(ip: IPAddress) -> bool:
    return any(ip in ipaddress.ip_network(net, strict=False) for net in settings.NOTIFY_WEBHOOK_ALLOWED_NETWORKS)
