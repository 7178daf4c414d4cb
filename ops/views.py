"""The operations page for admins: Celery workers and queues, the beat and the collector, cluster reachability."""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import redis
from celery import current_app
from django.conf import settings
from django.contrib import admin
from django.db.models import Count, Max, Q
from django.template.response import TemplateResponse
from django.utils import timezone

from clusters.models import Cluster
from core import measurements as store
from core.choices import ON_SCHEDULER_STATES
from jobs.models import Job
from telemetry.models import Node

from . import metrics

INSPECT_TIMEOUT = 1.0
# Past these, the page says the periodic process looks stopped.
BEAT_LATE_SECONDS = max(30.0, settings.GPULAB_POLL_INTERVAL * 6)
COLLECTOR_LATE_SECONDS = 30.0


def inspect_workers() -> list[dict]:
    """Every worker that answers within a second, with its pool size and running tasks (two broadcasts at once)."""
    inspector = current_app.control.inspect(timeout=INSPECT_TIMEOUT)
    with ThreadPoolExecutor(max_workers=2) as pool:
        stats_future, active_future = pool.submit(inspector.stats), pool.submit(inspector.active)
        stats, active = stats_future.result() or {}, active_future.result() or {}
    workers = []
    for name in sorted(set(stats) | set(active)):
        worker_stats: Mapping[str, Any] = stats.get(name, {})
        workers.append(
            {
                "name": name,
                "pid": worker_stats.get("pid"),
                "concurrency": (worker_stats.get("pool") or {}).get("max-concurrency"),
                "tasks_done": sum((worker_stats.get("total") or {}).values()),
                "active": [task.get("name", "?").rsplit(".", 1)[-1] for task in active.get(name, [])],
            }
        )
    return workers


def _age(marks: dict[str, float], event: str, late_after: float) -> dict:
    at = marks.get(event)
    if at is None:
        return {"seen": False, "late": True}
    age = time.time() - at
    return {"seen": True, "age": age, "late": age > late_after, "at": datetime.fromtimestamp(at, UTC)}


def cluster_rows() -> list[dict]:
    """Three queries whatever the number of clusters, jobs and nodes (no join of jobs with nodes)."""
    fresh_after = timezone.now() - timedelta(seconds=30)
    active = dict(
        Job.objects.filter(state__in=ON_SCHEDULER_STATES).values_list("cluster_id").annotate(n=Count("id")).order_by()
    )
    nodes = {
        row["cluster_id"]: row
        for row in Node.objects.values("cluster_id")
        .annotate(
            total=Count("id"),
            fresh=Count("id", filter=Q(last_sample_at__gte=fresh_after)),
            last_sample=Max("last_sample_at"),
        )
        .order_by()
    }
    try:
        polls = store.polls()
    except (redis.RedisError, OSError):
        polls = {}
    rows = []
    for cluster in Cluster.objects.order_by("name"):
        poll = polls.get(cluster.name)
        if poll:
            poll = {**poll, "at": datetime.fromtimestamp(poll["at"], UTC), "age": time.time() - poll["at"]}
        rows.append(
            {"cluster": cluster, "poll": poll, "active_jobs": active.get(cluster.pk, 0), "nodes": nodes.get(cluster.pk)}
        )
    return rows


def operations(request):
    problems = []
    try:
        marks = store.last_marks()
        queues = metrics.queue_lengths()
        sockets = store.process_gauge("websocket_clients")
        ssh = store.process_gauge("ssh_pool_connections")
    except (redis.RedisError, OSError) as exc:
        problems.append(f"Redis does not answer ({exc}); workers, queues and live figures are unknown.")
        marks, queues, sockets, ssh = {}, {}, {}, {}
    workers = inspect_workers() if not problems else []
    if not problems and not workers:
        problems.append("No Celery worker answered within a second: launches stay queued until one runs.")
    context = {
        **admin.site.each_context(request),
        "title": "Operations",
        "problems": problems,
        "workers": workers,
        "queues": queues,
        "beat": _age(marks, "beat", BEAT_LATE_SECONDS),
        "collector": _age(marks, "collector", COLLECTOR_LATE_SECONDS),
        "websocket_clients": int(sum(sockets.values())),
        "web_processes": len(sockets),
        "ssh_connections": int(sum(ssh.values())),
        "ssh_processes": len(ssh),
        "clusters": cluster_rows(),
    }
    return TemplateResponse(request, "ops/operations.html", context)
