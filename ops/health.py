"""Liveness and readiness probes.

`/healthz` says the process answers (no dependency is touched: a database outage must not get every web
pod restarted). `/readyz` says this replica can serve: the database, the Redis cache and telemetry server,
and the Celery broker each answer within a second. Both run before host validation and the HTTPS redirect,
because kubelets and load balancers probe pod IPs over plain HTTP.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import redis
from celery import current_app
from django.conf import settings
from django.db import connections
from django.http import HttpResponse, JsonResponse

logger = logging.getLogger(__name__)

PROBE_TIMEOUT = 1  # seconds


def check_database() -> None:
    connection = connections["default"]
    pool = getattr(connection, "pool", None)  # PostgreSQL in the web process (settings.DATABASE_POOL_SIZE)
    if pool is None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return
    # A connection within the probe's timeout, not after the 10 s a request may wait for one.
    pool.open()
    with pool.connection(timeout=PROBE_TIMEOUT) as pooled:
        pooled.execute("SELECT 1")


def _ping(url: str) -> None:
    client = redis.Redis.from_url(url, socket_timeout=PROBE_TIMEOUT, socket_connect_timeout=PROBE_TIMEOUT)
    try:
        client.ping()
    finally:
        client.close()


def check_redis() -> None:
    _ping(settings.REDIS_URL)
    if settings.TELEMETRY_REDIS_URL != settings.REDIS_URL:
        _ping(settings.TELEMETRY_REDIS_URL)


def check_broker() -> None:
    url = settings.CELERY_BROKER_URL
    if url.startswith("redis"):
        _ping(url)
        return
    # another broker (memory:// in unit runs): ask kombu, through the project's Celery app (portal/celery.py)
    with current_app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1, timeout=PROBE_TIMEOUT)


CHECKS: dict[str, Callable[[], None]] = {
    "database": check_database,
    "redis": check_redis,
    "broker": check_broker,
}


def readiness() -> tuple[bool, dict[str, dict]]:
    results = {}
    for name, check in CHECKS.items():
        started = time.monotonic()
        try:
            check()
        except Exception as exc:  # any failure means not ready; the class name says which kind
            logger.warning("readiness: %s failed: %s", name, exc)
            results[name] = {"ok": False, "error": f"{type(exc).__name__}: unreachable"}
        else:
            results[name] = {"ok": True}
        results[name]["ms"] = round((time.monotonic() - started) * 1000, 1)
    return all(r["ok"] for r in results.values()), results


def healthz(request) -> HttpResponse:
    return HttpResponse("ok\n", content_type="text/plain")


def readyz(request) -> JsonResponse:
    ready, results = readiness()
    return JsonResponse({"ready": ready, "checks": results}, status=200 if ready else 503)


class ProbeMiddleware:
    """Answers /healthz, /readyz and /metrics first in the chain (see the module docstring)."""

    def __init__(self, get_response):
        self.get_response = get_response
        from .metrics import metrics_view

        self.routes = {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics_view}

    def __call__(self, request):
        view = self.routes.get(request.path_info.rstrip("/") or "/")
        if view is not None and request.method in ("GET", "HEAD"):
            return view(request)
        return self.get_response(request)
