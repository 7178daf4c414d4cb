"""/healthz and /readyz of a real web process while its real services go away."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request

import pytest

from .conftest import free_port, start_web, wait_for


def probe(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (loopback)
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture
def own_redis(tmp_path):
    port = free_port()
    argv = [
        shutil.which("redis-server"),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--dir",
        str(tmp_path),
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    wait_for(lambda: subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).stdout, timeout=10)
    yield proc, url
    proc.kill()
    proc.wait(timeout=10)


def test_readyz_follows_redis_and_the_broker_while_healthz_stays_up(portal_env, own_redis, tmp_path):
    proc, url = own_redis
    env = {**portal_env, "REDIS_URL": url, "TELEMETRY_REDIS_URL": url}
    web = start_web(env, tmp_path / "web.log")
    try:
        status, body = probe(f"{web.url}/readyz")
        assert status == 200 and json.loads(body)["ready"] is True, body
        proc.kill()
        proc.wait(timeout=10)
        status, body = probe(f"{web.url}/readyz")
        checks = json.loads(body)["checks"]
        assert status == 503
        assert checks["database"]["ok"] is True and checks["redis"]["ok"] is False and checks["broker"]["ok"] is False
        assert probe(f"{web.url}/healthz") == (200, "ok\n")
    finally:
        web.stop()


def test_readyz_says_the_database_is_down(portal_env, tmp_path):
    env = {**portal_env, "DATABASE_URL": f"postgres://portal:x@127.0.0.1:{free_port()}/portal?connect_timeout=1"}
    web = start_web(env, tmp_path / "web.log")
    try:
        status, body = probe(f"{web.url}/readyz")
        checks = json.loads(body)["checks"]
        assert status == 503 and checks["database"]["ok"] is False
        assert checks["redis"]["ok"] is True and checks["broker"]["ok"] is True
        assert "127.0.0.1" not in body and "portal:x" not in body
        assert probe(f"{web.url}/healthz") == (200, "ok\n")
    finally:
        web.stop()
