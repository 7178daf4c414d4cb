"""The portal's frame around every page: error pages, the icon, the admin's branding and cluster form, the token."""

from __future__ import annotations

import subprocess

import pytest
from django.template.loader import render_to_string
from django.test import Client
from rest_framework.authtoken.models import Token

from clusters.backends.ssh import fingerprint
from clusters.models import Cluster

pytestmark = pytest.mark.django_db


def test_a_missing_page_is_the_portals_404_with_a_way_back(login, alice):
    page = login(alice).get("/jobs/00000000-0000-0000-0000-000000000000/")
    body = page.content.decode()
    assert page.status_code == 404
    assert "GPU Lab Portal" in body and "Nothing here" in body
    assert 'href="/jobs/"' in body and 'href="/"' in body  # My jobs, the templates
    anonymous = Client().get("/no-such-page/")
    assert anonymous.status_code == 404 and "Nothing here" in anonymous.content.decode()


def test_the_403_and_500_pages_are_branded_and_the_500_page_needs_no_request():
    forbidden = render_to_string("403.html", {"exception": "Only instructors may do that."})
    assert "Only instructors may do that." in forbidden and 'href="/jobs/"' in forbidden
    broken = render_to_string("500.html")  # Django renders it with an empty context, the database maybe down
    assert "GPU Lab Portal" in broken and "Something went wrong" in broken and 'href="/jobs/"' in broken


def test_favicon_is_served_and_linked(login, alice):
    icon = Client().get("/favicon.ico", follow=True)
    assert icon.status_code == 200
    assert b"".join(icon.streaming_content)[:4] == b"\x00\x00\x01\x00"  # an ICO file
    page = login(alice).get("/").content.decode()
    assert 'rel="icon"' in page and "img/favicon.svg" in page


def test_the_admin_is_branded_and_links_to_operations_and_nodes(login, admin_user):
    body = login(admin_user).get("/admin/").content.decode()
    assert "GPU Lab Portal administration" in body and "Django administration" not in body
    assert 'href="/admin/operations/"' in body and 'href="/nodes/"' in body


def slurm_cluster(host_key: str = "") -> Cluster:
    return Cluster.objects.create(name="campus", host="login.example.edu", host_key=host_key, partitions=["gpu"])


def test_slurm_cluster_admin_shows_slurm_fields_and_the_key_as_its_fingerprint(login, admin_user, tmp_path):
    key = tmp_path / "host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    public = key.with_suffix(".pub").read_text().strip()
    cluster = slurm_cluster(host_key=public)
    body = login(admin_user).get(f"/admin/clusters/cluster/{cluster.pk}/change/").content.decode()
    assert "SLURM: login node" in body and "Kubernetes" not in body and "id_api_url" not in body
    assert fingerprint(public) in body and public.split()[1] not in body  # the fingerprint, never the raw key
    assert (
        "must be a SLURM operator" in body and "ClusterQueue" not in body
    )  # the lab-sessions switch, in SLURM's words


def test_kubernetes_cluster_admin_shows_no_slurm_fields(login, admin_user):
    cluster = Cluster.objects.create(name="k8s", kind="kubernetes", api_url="https://k8s.example.edu:6443")
    body = login(admin_user).get(f"/admin/clusters/cluster/{cluster.pk}/change/").content.decode()
    assert "Kubernetes: API server" in body and "SLURM" not in body and "id_host" not in body
    assert "Kueue cohort" in body  # what the lab-sessions switch does here, in Kueue's words


def test_new_cluster_form_offers_each_kinds_fields_and_saves_only_the_chosen_kinds(login, admin_user):
    client = login(admin_user)
    body = client.get("/admin/clusters/cluster/add/").content.decode()
    assert "kind-slurm" in body and "kind-kubernetes" in body  # the page hides the kind not picked
    form = {"name": "k8s", "kind": "kubernetes", "enabled": "on", "api_url": "https://k8s.example.edu:6443",
            "host": "ignored.example.edu", "gpu_sharing_factor": "1", "accounts-TOTAL_FORMS": "0",
            "accounts-INITIAL_FORMS": "0"}  # fmt: skip
    assert client.post("/admin/clusters/cluster/add/", form).status_code == 302
    saved = Cluster.objects.get(name="k8s")
    assert saved.api_url == "https://k8s.example.edu:6443" and saved.host == ""


@pytest.mark.parametrize("kind", ["ed25519", "rsa", "ecdsa"])
def test_host_key_fingerprint_reads_like_ssh_keygen(tmp_path, kind):
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(key)], check=True)
    listed = subprocess.run(["ssh-keygen", "-lf", str(key.with_suffix(".pub"))], capture_output=True, text=True)
    expected = listed.stdout.split()[1]  # "256 SHA256:… comment (ED25519)"
    assert fingerprint(key.with_suffix(".pub").read_text()) == expected
    assert expected.startswith("SHA256:") and not expected.endswith("=")


def test_profile_masks_the_token_and_reveals_it_only_to_its_owner(login, alice, bob):
    token = Token.objects.create(user=alice)
    client = login(alice)
    body = client.get("/profile/").content.decode()
    assert token.key not in body and token.key[:4] in body
    assert "Replace your API token?" in body  # a confirmation before the old token stops working
    assert client.get("/profile/token/reveal/").status_code == 405
    assert client.post("/profile/token/reveal/").json() == {"token": token.key}
    assert login(bob).post("/profile/token/reveal/").status_code == 404  # bob has none, and never sees alice's
    assert Client().post("/profile/token/reveal/").status_code == 302  # anonymous: to the login page


def test_a_first_token_is_not_said_to_replace_an_old_one(login, alice):
    client = login(alice)
    first = client.post("/profile/token/", follow=True).content.decode()
    assert "Your API token was made" in first and "old one no longer works" not in first
    second = client.post("/profile/token/", follow=True).content.decode()
    assert "the old one no longer works" in second
