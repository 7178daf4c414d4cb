"""Prometheus /metrics for the portal itself.

Closed unless configured: a scraper sends `Authorization: Bearer <METRICS_TOKEN>`; with no token set the
endpoint answers 404 (METRICS_PUBLIC=1, the default with DEBUG=1, opens it).

Everything is read at scrape time from the shared state (PostgreSQL, Redis), so every web replica answers
with the whole portal's figures: scrape one of them (the Service), not each pod. One query for the jobs.
"""

from __future__ import annotations

import hmac
import logging
from typing import cast

import redis
from django.conf import settings
from django.db.models import Count
from django.http import HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import CollectorRegistry, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from core import measurements as store

logger = logging.getLogger(__name__)

CELERY_QUEUES = ("celery",)


def _histogram(name: str, documentation: str, source: str) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, documentation, labels=["cluster"])
    bounds = [str(bound) for bound in store.BUCKETS] + ["+Inf"]
    for cluster, (cumulative, _count, total) in store.histograms(source).items():
        family.add_metric([cluster], list(zip(bounds, cumulative, strict=True)), total)
    return family


def _broker_client() -> redis.Redis | None:
    url = settings.CELERY_BROKER_URL
    if not url.startswith("redis"):
        return None
    return redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)


def queue_lengths() -> dict[str, int]:
    """Messages waiting in each Celery queue (kombu keeps a Redis list per queue)."""
    broker = _broker_client()
    if broker is None:
        return {}
    try:
        return {queue: cast("int", broker.llen(queue)) for queue in CELERY_QUEUES}  # a sync client answers now
    finally:
        broker.close()


class PortalCollector(Collector):
    def collect(self):
        from jobs.models import Job

        jobs = GaugeMetricFamily("gpulab_jobs", "Jobs by state and cluster.", labels=["state", "cluster"])
        rows = Job.objects.values_list("state", "cluster__name").annotate(n=Count("id")).order_by()
        for state, cluster, count in rows:
            jobs.add_metric([state, cluster or ""], count)
        yield jobs

        try:
            yield _histogram(
                "gpulab_submit_latency_seconds",
                "From the Launch click to the scheduler accepting the job.",
                "submit_latency_seconds",
            )
            yield _histogram("gpulab_poll_cycle_seconds", "One status poll of a cluster.", "poll_cycle_seconds")
            gauges = (
                ("gpulab_websocket_clients", "Open telemetry WebSockets.", "websocket_clients"),
                ("gpulab_ssh_pool_connections", "Pooled SSH connections to login hosts.", "ssh_pool_connections"),
            )
            for name, documentation, source in gauges:
                values = store.process_gauge(source)
                yield GaugeMetricFamily(name, documentation, value=sum(values.values()))
                yield GaugeMetricFamily(f"{name}_processes", f"Processes reporting {source}.", value=len(values))
            queues = GaugeMetricFamily("gpulab_celery_queue_length", "Tasks waiting in the broker.", labels=["queue"])
            for queue, length in queue_lengths().items():
                queues.add_metric([queue], length)
            yield queues
            up = 1
        except (redis.RedisError, OSError) as exc:
            logger.warning("metrics: Redis unreachable: %s", exc)
            up = 0
        yield GaugeMetricFamily("gpulab_redis_up", "Whether Redis answered this scrape.", value=up)


def metrics_view(request) -> HttpResponse:
    """With METRICS_TOKEN set, only its bearer gets figures; without one, nobody does unless METRICS_PUBLIC."""
    token = settings.METRICS_TOKEN
    if token:
        sent = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(sent.encode(), token.encode()):
            return HttpResponse("Send Authorization: Bearer <METRICS_TOKEN>.\n", status=401, content_type="text/plain")
    elif not settings.METRICS_PUBLIC:
        return HttpResponse(status=404)  # not configured: nothing to see, not even that it exists
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PortalCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
