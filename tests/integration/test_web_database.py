"""The web process's PostgreSQL connections: a pool, because ASGI gives every request a thread of its own."""

from __future__ import annotations

import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from .conftest import start_web

pytestmark = pytest.mark.integration

APP = "gpulab-web-pool-test"


def backends(url: str) -> set[tuple[int, object]]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE application_name = %s", [APP]
        ).fetchall()
    return {(pid, started) for pid, started in rows}


def test_requests_share_the_pool_instead_of_connecting_each_time(portal_env, tmp_path):
    url = portal_env["DATABASE_URL"]
    env = {**portal_env, "DATABASE_URL": f"{url}?application_name={APP}", "DATABASE_POOL_SIZE": "3"}
    web = start_web(env, tmp_path / "web.log")
    seen: set[tuple[int, object]] = set()
    done = threading.Event()

    def watch() -> None:  # every connection the web process holds while the requests run
        while not done.is_set():
            seen.update(backends(url))
            time.sleep(0.01)

    def ready(_) -> int:
        with urllib.request.urlopen(f"{web.url}/readyz", timeout=20) as response:  # noqa: S310 (loopback)
            return response.status

    watcher = threading.Thread(target=watch)
    try:
        watcher.start()
        with ThreadPoolExecutor(8) as requests:
            statuses = list(requests.map(ready, range(80)))
        time.sleep(0.2)
    finally:
        done.set()
        watcher.join()
        web.stop()
    assert statuses == [200] * 80  # /readyz queries the database on every request
    assert 1 <= len(seen) <= 3, f"{len(seen)} database connections for 80 requests through a pool of 3"
