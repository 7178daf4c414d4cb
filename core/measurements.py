"""Portal-wide measurements kept in Redis, so that /metrics on any web replica describes the whole portal.

The processes that measure are not the ones scraped: submit latency and poll cycles happen in Celery workers,
WebSocket clients in web processes, SSH connections in workers and the collector. Each writes here; /metrics
reads. Writes never raise: a measurement lost to a Redis blip must never fail a submit or a poll.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import socket
import time
from typing import cast

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

PREFIX = "gpulab:ops:"
# Seconds; submit latency spans the queue wait and an SSH round trip, poll cycles one scheduler call.
BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
PROCESS_TTL = 120  # a process that stopped reporting this long ago no longer counts


@functools.cache
def client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=0.5, socket_connect_timeout=0.5)


def process_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _safely(write):
    @functools.wraps(write)
    def wrapper(*args, **kwargs):
        try:
            write(*args, **kwargs)
        except (redis.RedisError, OSError) as exc:
            logger.debug("metric %s not recorded: %s", write.__name__, exc)

    return wrapper


@_safely
def observe(name: str, seconds: float, label: str) -> None:
    """One observation of histogram `name` for `label` (a cluster name)."""
    key = f"{PREFIX}hist:{name}:{label}"
    bucket = next((i for i, bound in enumerate(BUCKETS) if seconds <= bound), len(BUCKETS))
    pipe = client().pipeline(transaction=False)
    pipe.sadd(f"{PREFIX}hist-labels:{name}", label)
    pipe.hincrby(key, str(bucket), 1)
    pipe.hincrby(key, "count", 1)
    pipe.hincrbyfloat(key, "sum", seconds)
    pipe.execute()


def histograms(name: str) -> dict[str, tuple[list[int], int, float]]:
    """label → (cumulative counts per bucket, +Inf last; count; sum)."""
    redis_client = client()
    members = cast("set[bytes]", redis_client.smembers(f"{PREFIX}hist-labels:{name}"))  # a sync client answers now
    labels = sorted(label.decode() for label in members)
    pipe = redis_client.pipeline(transaction=False)
    for label in labels:
        pipe.hgetall(f"{PREFIX}hist:{name}:{label}")
    result = {}
    for label, raw in zip(labels, cast("list[dict[bytes, bytes]]", pipe.execute()), strict=True):
        fields = {k.decode(): v.decode() for k, v in raw.items()}
        running, cumulative = 0, []
        for index in range(len(BUCKETS) + 1):
            running += int(fields.get(str(index), 0))
            cumulative.append(running)
        result[label] = (cumulative, int(fields.get("count", 0)), float(fields.get("sum", 0.0)))
    return result


@_safely
def set_process_gauge(name: str, value: float) -> None:
    """This process's current value of `name` (summed over live processes when read)."""
    expires = time.time() + PROCESS_TTL
    client().hset(f"{PREFIX}gauge:{name}", process_name(), f"{value}:{expires}")


def process_gauge(name: str) -> dict[str, float]:
    """process → value, for processes that reported within PROCESS_TTL; stale entries are removed."""
    key = f"{PREFIX}gauge:{name}"
    redis_client = client()
    now, live, stale = time.time(), {}, []
    for process, raw in _hash(key).items():
        value, _, expires = raw.decode().partition(":")
        if float(expires) < now:
            stale.append(process.decode())
        else:
            live[process.decode()] = float(value)
    if stale:
        redis_client.hdel(key, *stale)
    return live


@_safely
def record_poll(cluster: str, seconds: float, error: str) -> None:
    """A finished poll cycle: its time for the histogram, and the cluster's reachability for the ops page."""
    observe("poll_cycle_seconds", seconds, cluster)
    entry = {"at": time.time(), "seconds": round(seconds, 3), "error": error[:300]}
    client().hset(f"{PREFIX}polls", cluster, json.dumps(entry))
    if not error:
        heard_from(cluster)


@_safely
def heard_from(cluster: str) -> None:
    """The cluster's scheduler answered (a poll, a submission): job pages trust states younger than this."""
    client().hset(f"{PREFIX}heard", cluster, str(time.time()))


def polls() -> dict[str, dict]:
    return {k.decode(): json.loads(v) for k, v in _hash(f"{PREFIX}polls").items()}


def last_heard(clusters: list[str]) -> dict[str, float | None]:
    """cluster → when its scheduler last answered (epoch seconds), None if never recorded."""
    if not clusters:
        return {}
    values = cast("list[bytes | None]", client().hmget(f"{PREFIX}heard", clusters))
    return {name: float(value) if value else None for name, value in zip(clusters, values, strict=True)}


@_safely
def mark(event: str) -> None:
    """When something periodic last happened (the beat's tick, the collector's publish)."""
    client().hset(f"{PREFIX}last", event, str(time.time()))


def last_marks() -> dict[str, float]:
    return {k.decode(): float(v) for k, v in _hash(f"{PREFIX}last").items()}


def _hash(key: str) -> dict[bytes, bytes]:
    return cast("dict[bytes, bytes]", client().hgetall(key))  # redis-py types every reply as maybe awaitable


class SocketGauge:
    """Open WebSockets of this web process, reported on every change and every 30 s while the process lives."""

    def __init__(self, name: str = "websocket_clients") -> None:
        self.name = name
        self.count = 0
        self._refresher: asyncio.Task[None] | None = None

    async def changed(self, delta: int) -> None:
        self.count += delta
        if self._refresher is None or self._refresher.done():
            self._refresher = asyncio.get_running_loop().create_task(self._refresh())
        await asyncio.to_thread(set_process_gauge, self.name, self.count)  # never block the loop on Redis

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(PROCESS_TTL / 4)
            await asyncio.to_thread(set_process_gauge, self.name, self.count)
