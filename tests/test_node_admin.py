"""The node admin: the pinned host key is shown as its fingerprint, never as a field to type into, and changes only
through "Check and pin the host key" (the key the node presents, after the admin saw its fingerprint). The node is
the machine's own sshd (127.0.0.1:2222), reached for real."""

from __future__ import annotations

import subprocess

import pytest
from django.test import Client

from clusters.backends.ssh import fingerprint, probe_host_key
from clusters.models import CredentialEvent
from telemetry.models import Node

pytestmark = pytest.mark.django_db


@pytest.fixture
def node(cluster):
    return Node.objects.create(cluster=cluster, name="gpu01", address="127.0.0.1", ssh_port=2222, gpus=1)


@pytest.fixture
def other_key(tmp_path) -> str:
    key = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return key.with_suffix(".pub").read_text().strip()


def change_url(node) -> str:
    return f"/admin/telemetry/node/{node.pk}/change/"


def pin_url(node) -> str:
    return f"/admin/telemetry/node/{node.pk}/pin-host-key/"


def test_the_node_page_shows_the_pinned_key_as_its_fingerprint_and_no_field_to_type_one(login, admin_user, node):
    key = probe_host_key("127.0.0.1", 2222)
    Node.objects.filter(pk=node.pk).update(host_key=key)
    body = login(admin_user).get(change_url(node)).content.decode()
    assert fingerprint(key) in body and "matches the pinned key" in body
    assert key.split()[1] not in body  # the fingerprint, never the raw key
    assert 'name="host_key"' not in body and pin_url(node) in body


def test_a_host_key_posted_with_the_node_form_is_ignored(login, admin_user, node, other_key):
    form = {"address": "127.0.0.1", "ssh_port": "2222", "host_key": other_key}
    assert login(admin_user).post(change_url(node), form).status_code == 302
    node.refresh_from_db()
    assert node.host_key == "" and not CredentialEvent.objects.exists()


def test_the_admin_pins_the_key_the_node_presents_after_seeing_its_fingerprint(login, admin_user, node):
    key = probe_host_key("127.0.0.1", 2222)
    client = login(admin_user)
    page = client.get(pin_url(node)).content.decode()
    assert fingerprint(key) in page and "Not pinned" in page and 'id="pin"' in page
    node.refresh_from_db()
    assert node.host_key == ""  # looking pins nothing
    done = client.post(pin_url(node), {"host_key": key}).content.decode()
    node.refresh_from_db()
    assert node.host_key == key and 'id="matches"' in done
    event = CredentialEvent.objects.get()
    assert event.action == CredentialEvent.Action.HOST_KEY_PINNED and event.actor == admin_user
    assert event.detail == f"node gpu01: {fingerprint(key)}"


def test_a_key_the_node_does_not_present_is_never_pinned(login, admin_user, node, other_key):
    page = login(admin_user).post(pin_url(node), {"host_key": other_key}).content.decode()
    node.refresh_from_db()
    assert node.host_key == "" and "changed while you were confirming it" in page


def test_only_admins_with_the_change_permission_pin(make_user, login, node):
    key = probe_host_key("127.0.0.1", 2222)
    staff = make_user("sam", is_staff=True)
    assert login(staff).post(pin_url(node), {"host_key": key}).status_code == 403
    anonymous = Client().post(pin_url(node), {"host_key": key})
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    node.refresh_from_db()
    assert node.host_key == ""
