"""The collector process: reader threads fill LiveState; one asyncio loop publishes every tick.

A long-running process rather than Celery tasks: its SSH streams stay open for hours, which would pin a
worker slot each and not survive the worker's prefetch and retry semantics. One process serves every
cluster by default; `--cluster` splits clusters between several collectors.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from datetime import UTC, datetime

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, close_old_connections
from redis.exceptions import RedisError

from clusters import kinds
from clusters.backends import ssh
from clusters.models import Cluster
from core import measurements
from jobs import trainer_curve
from telemetry import stream
from telemetry.collector.batch_source import NodesOverSshSource
from telemetry.collector.kubernetes_source import MetricsApiSource
from telemetry.frames import FrameBuilder
from telemetry.live import LiveState
from telemetry.models import Node
from telemetry.recorder import SeriesRecorder
from telemetry.summary import store_ended

from .sources import LogSource, Periodic

logger = logging.getLogger(__name__)

HOUSEKEEPING_SECONDS = 5.0
# The collector's sources by the name a kind gives (Kind.telemetry_source): the kinds stand below the collector, so
# they name how their clusters are measured and the collector owns the readers.
SOURCES = {"nodes-over-ssh": NodesOverSshSource, "metrics-api": MetricsApiSource}


class Collector:
    def __init__(self, cluster_names: list[str] | None = None, tick: float | None = None):
        self.cluster_names = cluster_names or []
        self.tick = tick or settings.TELEMETRY_TICK_SECONDS
        self.state = LiveState()
        self.builder = FrameBuilder(idle_seconds=settings.TELEMETRY_IDLE_SECONDS)
        self.recorder = SeriesRecorder(settings.TELEMETRY_FLUSH_SECONDS)
        self.logs: queue.Queue = queue.Queue()
        self.stop = threading.Event()
        self.sources: dict[int, Periodic] = {}
        self.log_source: LogSource | None = None
        self.redis_down_since: float | None = None

    # -- sources ------------------------------------------------------------------------------------------------
    def clusters(self) -> list[Cluster]:
        clusters = Cluster.objects.filter(enabled=True)
        if self.cluster_names:
            clusters = clusters.filter(name__in=self.cluster_names)
        return list(clusters)

    def start_sources(self) -> None:
        for cluster in self.clusters():
            if cluster.pk in self.sources:
                continue
            source_class = SOURCES.get(kinds.kind_of(cluster.kind).telemetry_source)
            if source_class is None:  # a kind with nothing to measure: its jobs have logs but no live charts
                continue
            source = self.sources[cluster.pk] = source_class(self.state, cluster, self.stop)
            source.start()
            logger.info("telemetry: following %s (%s)", cluster.name, cluster.kind)
        if self.log_source is None:
            self.log_source = LogSource(self.state, self.logs, self.stop, lambda: list(self.sources))
            self.log_source.start()

    # -- the loop -----------------------------------------------------------------------------------------------
    async def run(self, *, seconds: float | None = None) -> None:
        await sync_to_async(self.start_sources, thread_sensitive=False)()
        publisher = stream.Publisher()
        started = last_housekeeping = time.monotonic()
        try:
            while not self.stop.is_set() and (seconds is None or time.monotonic() - started < seconds):
                tick_started = time.monotonic()
                await self.publish_once(publisher)
                if time.monotonic() - last_housekeeping > HOUSEKEEPING_SECONDS:
                    last_housekeeping = time.monotonic()
                    await sync_to_async(self.housekeeping, thread_sensitive=False)()
                await asyncio.sleep(max(0.0, self.tick - (time.monotonic() - tick_started)))
        finally:
            self.stop.set()
            await publisher.close()
            await sync_to_async(self.store_series, thread_sensitive=False)(time.time(), closing=True)

    async def publish_once(self, publisher: stream.Publisher, *, now: float | None = None) -> None:
        """One tick at `now` (the clock by default; benchmarks replay the past)."""
        now = time.time() if now is None else now
        snapshot = self.state.take()
        frames = self.builder.build(snapshot, now)
        self.recorder.add(frames, now)
        logs = []
        while not self.logs.empty():
            logs.append(self.logs.get_nowait())
        try:
            await publisher.publish(frames, now_ms=int(now * 1000))
            for job_id, offset, next_offset, data in logs:
                await publisher.send_log(job_id, offset, next_offset, data)
            if snapshot.trainer:
                async with publisher.redis.pipeline(transaction=False) as pipe:
                    for job_id, points in snapshot.trainer.items():
                        trainer_curve.add_curve_points(pipe, job_id, [_point(p) for p in points])
                    await pipe.execute()
            if self.redis_down_since is not None:
                logger.info("telemetry: Redis is back after %.1f s", time.monotonic() - self.redis_down_since)
                self.redis_down_since = None
        except (RedisError, OSError) as exc:
            # Frames of this tick are lost; clients see the gap in seq and fetch the ring once Redis is back.
            self.builder.not_published()
            if self.redis_down_since is None:
                self.redis_down_since = time.monotonic()
                logger.warning("telemetry: cannot publish, Redis: %s", exc)
        if self.recorder.due(now):
            await sync_to_async(self.store_series, thread_sensitive=False)(now)

    def store_series(self, now: float, *, closing: bool = False) -> None:
        """Write the recorder's complete buckets; on a database error they stay pending for the next flush."""
        try:
            rows = self.recorder.flush(now, closing=closing)
            if rows:
                logger.debug("telemetry: stored %d series chunk(s) in %.3f s", rows, self.recorder.last_cost[1])
        except DatabaseError as exc:
            logger.warning("telemetry: cannot store series, database: %s", exc)
        finally:
            close_old_connections()

    def housekeeping(self) -> None:
        """Summaries of jobs that ended; node facts for the admin pages; clusters added since start."""
        try:
            ended = store_ended(self.builder.usage)
            if ended:
                logger.info("telemetry: stored the summary of %d ended job(s)", len(ended))
            now = time.time()
            for node_id, live in list(self.state.nodes.items()):
                newest = max(live.gpus_at, live.host_at)
                fields: dict[str, object] = {"status": live.status[:255], "has_gpu": live.has_gpu}
                if newest:
                    fields["last_sample_at"] = datetime.fromtimestamp(newest, tz=UTC)
                if live.stale(now) and newest:
                    fields["status"] = f"stale: no sample for {now - newest:.0f} s ({live.status})"[:255]
                Node.objects.filter(pk=node_id).update(**fields)
            self.start_sources()
            measurements.mark("collector")
            ssh.report_pool_size()
        finally:
            close_old_connections()


def _point(p) -> dict:
    point = {"epoch": p.epoch, "step": p.step, "loss": p.loss, "tok_s": p.tokens_per_s, "step_ms": p.step_ms}
    return point if p.total_steps is None else {**point, "total_steps": p.total_steps}
