"""The slurm-rest kind in the admin: its fields, the token as a write-only credential with its expiry and a warning
before it lapses, its rotation, and who may see those pages."""

import base64
import json
import time

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import reverse

from clusters.models import AuthMethod, Cluster, ClusterAccount, CredentialEvent

pytestmark = pytest.mark.django_db


def make_token(lifetime: float, user: str = "root") -> str:
    def part(data):
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    now = int(time.time())
    return f"{part({'alg': 'HS256'})}.{part({'exp': int(now + lifetime), 'iat': now, 'sun': user})}.c2ln"


@pytest.fixture
def rest_cluster(course):
    cluster = Cluster.objects.create(
        name="rest", kind="slurm-rest", api_url="http://127.0.0.1:6820", run_as="service", shared_user="labshared"
    )
    ClusterAccount.objects.create(cluster=cluster, username="labsvc", auth_method=AuthMethod.KEY)
    course.clusters.add(cluster)
    return cluster


def account_form(account, **extra) -> dict:
    data = {"cluster": account.cluster_id, "user": "", "username": account.username, "auth_method": "key"}
    return {**data, "secret": "", "api_token": "", **extra}


def test_rest_cluster_admin_shows_its_url_and_slurm_fields_and_no_kubernetes_ones(login, admin_user, rest_cluster):
    body = login(admin_user).get(f"/admin/clusters/cluster/{rest_cluster.pk}/change/").content.decode()
    assert "SLURM REST: slurmrestd" in body and "id_api_url" in body and "SLURM: login node" in body
    assert "Kubernetes: API server" not in body and "id_kube_context" not in body


def test_new_cluster_form_shows_each_shared_field_once(login, admin_user):
    body = login(admin_user).get("/admin/clusters/cluster/add/").content.decode()
    assert body.count('name="api_url"') == 1 and body.count('name="host"') == 1
    assert "kind-slurm-rest" in body and "kind-kubernetes" in body and "kind-slurm" in body


def test_the_token_is_write_only_encrypted_and_its_expiry_is_shown(login, admin_user, rest_cluster):
    account = rest_cluster.service_account()
    url = reverse("admin:clusters_clusteraccount_change", args=[account.pk])
    token = make_token(30 * 86400)
    client = login(admin_user)
    assert client.post(url, account_form(account, api_token=token)).status_code == 302
    page = client.get(url).content.decode()
    assert token not in page and token.split(".")[1] not in page and "valid until" in page
    account.refresh_from_db()
    assert account.api_token() == token and account.api_token_expires_at is not None
    with connection.cursor() as cursor:
        cursor.execute("select api_token_encrypted from clusters_clusteraccount where id = %s", [account.pk])
        assert token.split(".")[1] not in cursor.fetchone()[0]
    assert client.post(url, account_form(account)).status_code == 302  # empty keeps the stored token
    account.refresh_from_db()
    assert account.api_token() == token
    details = list(CredentialEvent.objects.filter(action="changed").values_list("detail", "actor__username"))
    assert details == [("slurmrestd token", "ada")]


def test_a_lapsed_or_malformed_token_is_refused_with_what_to_do(login, admin_user, rest_cluster):
    account = rest_cluster.service_account()
    url = reverse("admin:clusters_clusteraccount_change", args=[account.pk])
    client = login(admin_user)
    page = client.post(url, account_form(account, api_token=make_token(-60))).content.decode()
    assert "This token expired on" in page and "make a new one" in page
    page = client.post(url, account_form(account, api_token="not-a-token")).content.decode()
    assert "scontrol token" in page
    assert not ClusterAccount.objects.get(pk=account.pk).has_api_token


def test_admin_pages_warn_while_the_token_lapses_within_a_week(login, admin_user, rest_cluster):
    account = rest_cluster.service_account()
    token = make_token(2 * 86400)
    from clusters.backends import tokens

    account.set_api_token(token, tokens.expires_at(token))
    account.save()
    client = login(admin_user)
    cluster_page = client.get(f"/admin/clusters/cluster/{rest_cluster.pk}/change/").content.decode()
    assert "store a new one before then" in cluster_page
    account_page = client.get(reverse("admin:clusters_clusteraccount_change", args=[account.pk])).content.decode()
    assert "store a new one before then" in account_page


def test_rotate_credentials_moves_tokens_to_the_new_key(rest_cluster, settings):
    account = rest_cluster.service_account()
    token = make_token(86400)
    account.set_api_token(token, None)
    account.save()
    old_key = settings.CREDENTIAL_KEYS[0]
    settings.CREDENTIAL_KEYS = [Fernet.generate_key().decode(), old_key]
    call_command("rotate_credentials")
    settings.CREDENTIAL_KEYS = settings.CREDENTIAL_KEYS[:1]
    assert ClusterAccount.objects.get(pk=account.pk).api_token() == token


def test_only_admins_open_the_account_page(login, alice, admin_user, rest_cluster):
    url = reverse("admin:clusters_clusteraccount_change", args=[rest_cluster.service_account().pk])
    assert Client().get(url).status_code == 302  # anonymous: to the admin login
    assert login(alice).get(url).status_code == 302  # a student is no staff member
    assert login(admin_user).get(url).status_code == 200


def test_students_register_their_own_account_on_rest_clusters(login, alice, rest_cluster):
    body = login(alice).get(reverse("profile")).content.decode()
    assert f'value="{rest_cluster.pk}"' in body
