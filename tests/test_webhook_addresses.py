"""Webhook addresses: every IPv6 form of an inside IPv4 address is refused, every address a name resolves to is
checked, and the post goes to the address that was checked (no second lookup for DNS rebinding to answer)."""

from __future__ import annotations

import datetime
import re
import socket
import ssl

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from notifications import webhook_post
from notifications.webhook_urls import UnsafeURL, allowed, check, resolve
from tests.webhook_receiver import WebhookReceiver

NAME = "hooks.example.test"
REAL_GETADDRINFO = socket.getaddrinfo


def answers(monkeypatch, *lookups: list[str]) -> list[str]:
    """Makes NAME resolve to lookups[0] the first time, lookups[1] the next, ...; other names resolve as ever."""
    asked: list[str] = []

    def fake(host, port, *args, **kwargs):
        if host != NAME:
            return REAL_GETADDRINFO(host, port, *args, **kwargs)
        addresses = lookups[min(len(asked), len(lookups) - 1)]
        asked.append(host)
        family = {True: socket.AF_INET6, False: socket.AF_INET}
        return [(family[":" in a], socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return asked


HOSTILE = [
    "::127.0.0.1",  # IPv4-compatible loopback
    "::10.0.0.1",
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:169.254.169.254",
    "64:ff9b::7f00:1",  # NAT64 well-known prefix to 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # ... to the cloud metadata address
    "64:ff9b::c0a8:1",  # ... to 192.168.0.1
    "64:ff9b:1::808:808",  # the local-use NAT64 prefix, whatever it embeds
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo whose client is 127.0.0.1
    "2001:0:a00:1:8000:63bf:f7f7:f7f7",  # Teredo whose server is 10.0.0.1
    "::",
    "::1",
    "0.0.0.0",  # noqa: S104  (an address refused, not one bound)
    "127.0.0.2",
    "100.64.0.1",  # shared address space (carrier NAT)
    "fd00::1",
    "ff02::1",
    "224.0.0.1",
]


@pytest.mark.parametrize("address", HOSTILE)
def test_every_ipv6_form_of_an_inside_address_is_refused(address):
    assert not allowed(address)
    with pytest.raises(UnsafeURL):
        check(f"http://[{address}]/hook" if ":" in address else f"http://{address}/hook")


@pytest.mark.parametrize("address", HOSTILE)
def test_a_name_resolving_to_an_inside_form_is_refused(monkeypatch, address):
    answers(monkeypatch, [address])
    with pytest.raises(UnsafeURL, match=NAME):
        check(f"https://{NAME}/hook")


@pytest.mark.parametrize(
    "url", ["http://0x7f000001/x", "http://2130706433/x", "http://127.1/x", "http://017700000001/x"]
)
def test_numeric_spellings_of_loopback_are_refused(url):
    with pytest.raises(UnsafeURL):
        check(url)


@pytest.mark.parametrize("address", ["93.184.215.14", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"])
def test_public_addresses_in_any_form_are_accepted(address):
    assert allowed(address)


def test_a_name_with_one_public_and_one_loopback_address_is_refused(monkeypatch):
    answers(monkeypatch, ["93.184.215.14", "127.0.0.1"])
    with pytest.raises(UnsafeURL, match=re.escape("(127.0.0.1)")):
        check(f"https://{NAME}/hook")


def test_an_admin_allowed_network_covers_its_ipv6_forms(settings):
    settings.NOTIFY_WEBHOOK_ALLOWED_NETWORKS = ["10.20.0.0/16"]
    assert allowed("::ffff:10.20.1.2") and allowed("64:ff9b::a14:102")
    assert not allowed("::ffff:10.21.1.2")


def test_the_post_goes_to_the_checked_address_not_to_a_rebound_one(monkeypatch, settings):
    """The resolver answers the allowed address to the first lookup and loopback to every later one (DNS rebinding):
    the receiver on the allowed address gets the post, the one on 127.0.0.1 (same port) sees nothing."""
    settings.NOTIFY_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]  # stands for a public address here
    checked = WebhookReceiver(host="127.0.0.2")
    inside = WebhookReceiver(host="127.0.0.1", port=checked.port)
    try:
        asked = answers(monkeypatch, ["127.0.0.2"], ["127.0.0.1"])
        target = resolve(f"http://{NAME}:{checked.port}/hooks/abc")
        assert webhook_post.post(target, {"text": "hi"}, timeout=5).status_code == 200
        assert checked.bodies == [{"text": "hi"}] and inside.tries == 0
        assert checked.hosts == [f"{NAME}:{checked.port}"] and len(asked) == 1
    finally:
        checked.stop()
        inside.stop()


def test_the_delivery_resolves_once_and_posts_to_what_it_checked(monkeypatch, settings, alice, course, make_job):
    from notifications import notify
    from notifications.events import Channel, Event
    from notifications.models import CourseWebhook, Notification
    from workers.notify import send_webhook

    settings.NOTIFY_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    checked = WebhookReceiver(host="127.0.0.2")
    inside = WebhookReceiver(host="127.0.0.1", port=checked.port)
    try:
        CourseWebhook.objects.create(course=course, url=f"http://{NAME}:{checked.port}/h", events=[Event.FAILED])
        notify(alice, Event.FAILED, job=make_job(alice))
        answers(monkeypatch, ["127.0.0.2"], ["127.0.0.1"])
        assert send_webhook.apply(args=[Notification.objects.get(channel=Channel.WEBHOOK).pk]).get() == "sent"
        assert len(checked.bodies) == 1 and inside.tries == 0
    finally:
        checked.stop()
        inside.stop()


def test_a_refused_connection_tries_the_next_checked_address(monkeypatch, settings):
    settings.NOTIFY_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32", "127.0.0.3/32"]
    receiver = WebhookReceiver(host="127.0.0.3")
    try:
        answers(monkeypatch, ["127.0.0.2", "127.0.0.3"])  # nothing listens on 127.0.0.2
        target = resolve(f"http://{NAME}:{receiver.port}/h")
        assert webhook_post.post(target, {"text": "hi"}, timeout=5).status_code == 200
        assert receiver.tries == 1
    finally:
        receiver.stop()


def _certificate(tmp_path, name: str) -> tuple[ssl.SSLContext, str]:
    """A server context whose certificate names `name`, signed by a throwaway CA; and that CA's file."""
    now = datetime.datetime.now(datetime.UTC)

    def issue(subject, issuer, key, signer, *, ca: bool, san=None):
        builder = x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
        builder = (
            builder.serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
        )
        builder = builder.add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(san)]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = issue(ca_name, ca_name, ca_key, ca_key, ca=True)
    cert = issue(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]), ca_name, key, ca_key, ca=False, san=name)
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "server.pem").write_bytes(
        cert.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.pem")
    return context, str(tmp_path / "ca.pem")


def test_tls_names_and_verifies_the_host_name_while_connecting_to_the_checked_address(monkeypatch, settings, tmp_path):
    settings.NOTIFY_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    context, ca = _certificate(tmp_path, NAME)
    sni: list[str | None] = []
    context.sni_callback = lambda sock, server_name, ctx: sni.append(server_name)
    receiver = WebhookReceiver(host="127.0.0.2", tls=context)
    try:
        answers(monkeypatch, ["127.0.0.2"], ["127.0.0.1"])
        target = resolve(f"https://{NAME}:{receiver.port}/h")
        assert webhook_post.post(target, {"text": "hi"}, timeout=5, verify=ca).status_code == 200
        assert sni == [NAME] and receiver.hosts == [f"{NAME}:{receiver.port}"]
    finally:
        receiver.stop()


def test_a_certificate_for_another_name_is_refused_at_the_checked_address(monkeypatch, settings, tmp_path):
    settings.NOTIFY_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    context, ca = _certificate(tmp_path, "someone-else.test")
    receiver = WebhookReceiver(host="127.0.0.2", tls=context)
    try:
        answers(monkeypatch, ["127.0.0.2"])
        target = resolve(f"https://{NAME}:{receiver.port}/h")
        with pytest.raises(requests.exceptions.SSLError):
            webhook_post.post(target, {"text": "hi"}, timeout=5, verify=ca)
        assert receiver.tries == 0
    finally:
        receiver.stop()
