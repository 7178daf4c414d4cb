"""Credentials: encrypted at rest, rotatable, write-only in forms, audited; settings refuse weak keys."""

import os
import subprocess
import sys

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from clusters.models import ClusterAccount, CredentialEvent

CANARY = "CANARY-7f3a9c-do-not-leak"


@pytest.mark.django_db
def test_secret_is_encrypted_at_rest(cluster):
    account = cluster.service_account()
    account.set_secret(CANARY)
    account.save()
    with connection.cursor() as cursor:
        cursor.execute("select secret_encrypted from clusters_clusteraccount where id = %s", [account.pk])
        stored = cursor.fetchone()[0]
    assert CANARY not in stored and ClusterAccount.objects.get(pk=account.pk).secret() == CANARY


@pytest.mark.django_db
def test_rotate_credentials_moves_secrets_to_the_new_key(cluster, settings):
    account = cluster.service_account()
    account.set_secret(CANARY)
    account.save()
    old_key = settings.CREDENTIAL_KEYS[0]
    new_key = Fernet.generate_key().decode()
    settings.CREDENTIAL_KEYS = [new_key, old_key]
    call_command("rotate_credentials")
    settings.CREDENTIAL_KEYS = [new_key]  # the old key is gone; the secret still decrypts
    assert ClusterAccount.objects.get(pk=account.pk).secret() == CANARY
    assert CredentialEvent.objects.filter(action="rotated").count() == 1


@pytest.mark.django_db
def test_admin_account_form_is_write_only_and_audited(client, admin_user, cluster):
    client.force_login(admin_user)
    account = cluster.service_account()
    url = reverse("admin:clusters_clusteraccount_change", args=[account.pk])
    page = client.get(url).content.decode()
    assert "not-a-real-password" not in page and 'name="secret"' in page
    data = {"cluster": cluster.pk, "user": "", "username": "labsvc", "auth_method": "password", "secret": CANARY}
    assert client.post(url, data).status_code == 302
    assert CANARY not in client.get(url).content.decode()
    data["secret"] = ""  # empty keeps the stored secret
    client.post(url, data)
    assert ClusterAccount.objects.get(pk=account.pk).secret() == CANARY
    events = list(CredentialEvent.objects.values_list("action", "actor__username"))
    assert events == [("changed", "ada")]


@pytest.mark.django_db
def test_student_registers_own_account_and_jobs_run_as_them(login, alice, cluster, make_job):
    response = login(alice).post(
        reverse("profile"),
        {"cluster": cluster.pk, "username": "labstudent", "auth_method": "password", "secret": CANARY},
    )
    assert response.status_code == 302
    page = login(alice).get(reverse("profile")).content.decode()
    assert "labstudent" in page and CANARY not in page
    assert make_job(alice).account.username == "labstudent"
    assert CredentialEvent.objects.get().action == "set"


@pytest.mark.django_db
def test_profile_rejects_unreadable_private_key(login, alice, cluster):
    response = login(alice).post(
        reverse("profile"), {"cluster": cluster.pk, "username": "me", "auth_method": "key", "secret": "garbage"}
    )
    assert response.status_code == 400 and "cannot be read" in response.content.decode()


def _start_settings(env_overrides):
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "CREDENTIAL_KEYS", "DEBUG"}}
    env.update(env_overrides, DJANGO_SETTINGS_MODULE="portal.settings")
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True, text=True, check=False
    )


def test_production_refuses_to_start_without_secret_key():
    result = _start_settings({"CREDENTIAL_KEYS": Fernet.generate_key().decode()})
    assert result.returncode != 0 and "SECRET_KEY is missing" in result.stderr


def test_production_refuses_to_start_without_credential_keys():
    result = _start_settings({"SECRET_KEY": "s3cr3t-" * 8})
    assert result.returncode != 0 and "CREDENTIAL_KEYS is missing" in result.stderr


def test_production_starts_with_both_and_reads_files(tmp_path):
    key_file = tmp_path / "keys"
    key_file.write_text(Fernet.generate_key().decode())
    result = _start_settings({"SECRET_KEY": "s3cr3t-" * 8, "CREDENTIAL_KEYS_FILE": str(key_file)})
    assert result.returncode == 0, result.stderr
