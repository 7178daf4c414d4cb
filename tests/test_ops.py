"""Operating the portal: production settings, probes, request and job ids in JSON logs, /metrics, the ops page."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis
from cryptography.fernet import Fernet
from django.urls import reverse

from core import logs
from core import measurements as store
from jobs import access

ROOT = Path(__file__).resolve().parents[1]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def production_env(tmp_path, **extra) -> dict[str, str]:
    """What a site sets (see docs/operations.md): nothing from the developer's .env or the test settings."""
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "CREDENTIAL_KEYS": Fernet.generate_key().decode(),
        "ALLOWED_HOSTS": "gpulab.example.edu",
        "CSRF_TRUSTED_ORIGINS": "https://gpulab.example.edu",
        "DATABASE_URL": f"sqlite:///{tmp_path}/portal.sqlite3",
        "HTTPS": "1",
        "LOG_FORMAT": "json",
        "DATA_DIR": str(tmp_path),
    }
    return {**env, **extra}


def check_deploy(env) -> subprocess.CompletedProcess:
    argv = [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    result = check_deploy(production_env(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_flags_a_site_without_https(tmp_path):
    result = check_deploy(production_env(tmp_path, HTTPS="0"))
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr


def test_production_refuses_to_start_with_a_weak_secret(tmp_path):
    result = check_deploy(production_env(tmp_path, SECRET_KEY="short"))
    assert result.returncode != 0 and "SECRET_KEY is missing or too weak" in result.stderr


def test_secrets_come_from_files(tmp_path):
    secret = tmp_path / "secret_key"
    secret.write_text(secrets.token_urlsafe(50) + "\n")
    env = production_env(tmp_path, SECRET_KEY_FILE=str(secret))
    del env["SECRET_KEY"]
    assert check_deploy(env).returncode == 0
    env["SECRET_KEY_FILE"] = str(tmp_path / "missing")
    result = check_deploy(env)
    assert result.returncode != 0 and "SECRET_KEY_FILE" in result.stderr and "cannot be read" in result.stderr


def database_settings(env, entry: str) -> dict:
    """DATABASES["default"] as a process started through `entry` (an import statement) sees it."""
    code = f"{entry}\nimport json; from django.conf import settings; print(json.dumps(settings.DATABASES['default']))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_web_process_takes_database_connections_from_a_pool_and_workers_do_not(tmp_path):
    env = production_env(tmp_path, DATABASE_URL="postgres://portal:pw@127.0.0.1:5432/portal", DATABASE_POOL_SIZE="7")
    web = database_settings(env, "import portal.asgi")
    assert web["OPTIONS"]["pool"] == {"min_size": 2, "max_size": 7, "timeout": 10}
    assert web["CONN_MAX_AGE"] == 0  # Django refuses a pool with persistent connections
    # Celery forks its worker processes after start-up, and a pool must not cross a fork.
    worker = database_settings(env, "import django; django.setup()")
    assert "pool" not in worker["OPTIONS"] and worker["CONN_MAX_AGE"] == 60
    unpooled = database_settings({**env, "DATABASE_POOL_SIZE": "0"}, "import portal.asgi")
    assert "pool" not in unpooled["OPTIONS"] and unpooled["CONN_MAX_AGE"] == 60


def test_healthz_answers_before_host_checks_and_the_https_redirect(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    response = client.get("/healthz", HTTP_HOST="10.1.2.3:8000")  # a kubelet probing the pod IP over HTTP
    assert response.status_code == 200 and response.content == b"ok\n"
    assert client.get("/login/", HTTP_HOST="10.1.2.3:8000").status_code == 400  # pages still check the host


@pytest.mark.django_db
def test_readyz_names_the_service_that_is_down(client, settings):
    unused_tcp_port = closed_port()
    settings.REDIS_URL = settings.TELEMETRY_REDIS_URL = f"redis://127.0.0.1:{unused_tcp_port}/0"
    settings.CELERY_BROKER_URL = settings.REDIS_URL
    response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 503 and body["ready"] is False
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["redis"] == {
        "ok": False,
        "error": "ConnectionError: unreachable",
        "ms": body["checks"]["redis"]["ms"],
    }
    assert body["checks"]["broker"]["ok"] is False
    assert str(unused_tcp_port) not in response.content.decode()  # no addresses or passwords in the answer


def test_request_ids_are_kept_when_sane_and_made_otherwise(client):
    sent = "edge-4f1c2a9b77d0"
    assert client.get("/healthz/").status_code == 200
    assert client.get("/login/", HTTP_X_REQUEST_ID=sent)["X-Request-ID"] == sent
    made = client.get("/login/", HTTP_X_REQUEST_ID="bad id\nInjected: 1")["X-Request-ID"]
    assert len(made) == 32 and "\n" not in made


def json_line(record_logger: str, message: str) -> dict:
    record = logging.LogRecord(record_logger, logging.INFO, __file__, 1, message, None, None)
    logs.ContextFilter().filter(record)
    return json.loads(logs.JsonFormatter().format(record))


def test_json_logs_carry_the_request_and_the_job_the_access_helper_handed_out(make_job, alice, fake_backend):
    job = make_job(alice, seconds=30)
    token = logs.request_id_var.set("req-0123456789")
    try:
        assert "job_id" not in json_line("jobs", "before")
        access.get_job(alice, job.pk)
        entry = json_line("jobs", "cancel requested")
    finally:
        logs.request_id_var.reset(token)
    assert entry["request_id"] == "req-0123456789" and entry["job_id"] == str(job.pk)
    assert entry["level"] == "INFO" and entry["message"] == "cancel requested" and entry["time"].endswith("+00:00")


@pytest.mark.django_db
def test_metrics_token_is_required_when_set(client, settings):
    settings.METRICS_TOKEN = "scrape-token-123"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-123")
    assert response.status_code == 200 and b"gpulab_jobs" in response.content


@pytest.mark.django_db
def test_metrics_answer_nothing_without_a_token_unless_made_public(client, settings):
    settings.METRICS_TOKEN, settings.METRICS_PUBLIC = "", False
    response = client.get("/metrics")
    assert response.status_code == 404 and response.content == b""
    settings.METRICS_PUBLIC = True
    assert client.get("/metrics").status_code == 200


def test_production_closes_metrics_and_reads_the_token_from_a_file(tmp_path):
    token_file = tmp_path / "metrics_token"
    token_file.write_text("from-a-file-456\n")
    code = "from django.conf import settings as s; print(f'{s.METRICS_PUBLIC}|{s.METRICS_TOKEN}')"
    argv = [sys.executable, "manage.py", "shell", "-c", code]
    for extra, expected in [({}, "False|"), ({"METRICS_TOKEN_FILE": str(token_file)}, "False|from-a-file-456")]:
        env = production_env(tmp_path, **extra)
        result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert result.stdout.splitlines()[-1] == expected, result.stdout + result.stderr


def test_metrics_count_jobs_by_state_and_cluster_in_one_query(
    client, make_job, alice, bob, fake_backend, django_assert_max_num_queries
):
    for owner in (alice, alice, bob):
        make_job(owner, seconds=30)
    with django_assert_max_num_queries(1):
        text = client.get("/metrics").content.decode()
    assert 'gpulab_jobs{cluster="local",state="queued"} 3.0' in text.replace(", ", ",")


@pytest.mark.django_db
def test_operations_page_is_for_admins_only(client, login, alice, admin_user, cluster):
    url = reverse("operations")
    with contextlib.suppress(redis.RedisError, OSError):  # a shared Redis may remember earlier polls
        store.client().delete(f"{store.PREFIX}polls")
    login(alice)
    assert client.get(url).status_code == 302  # the admin login, as for every admin page
    login(admin_user)
    response = client.get(url)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Celery workers" in page and cluster.display_name in page and "not polled yet" in page


def test_tasks_log_with_the_id_of_the_request_that_queued_them_and_their_job():
    from types import SimpleNamespace

    from ops import signals

    headers: dict = {}
    token = logs.request_id_var.set("req-abcdef123")
    try:
        signals._add_request_id(headers=headers)
    finally:
        logs.request_id_var.reset(token)
    job_id = uuid.uuid4()
    task = SimpleNamespace(name="workers.tasks.submit_job", request=SimpleNamespace(**headers))
    try:
        signals._bind_ids(task=task, args=[str(job_id)])
        assert (logs.request_id_var.get(), logs.job_id_var.get()) == ("req-abcdef123", str(job_id))
        signals._bind_ids(task=SimpleNamespace(name="workers.tasks.poll_clusters", request=SimpleNamespace()), args=[])
        assert (logs.request_id_var.get(), logs.job_id_var.get()) == ("", "")  # nothing left from the last task
    finally:
        logs.request_id_var.set("")
        logs.job_id_var.set("")
