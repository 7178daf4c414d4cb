"""Fan-out of telemetry: one pre-serialized frame per group per tick, a 10-minute ring in Redis, sequence numbers.

A frame is JSON text built once by the collector. Each group has a Redis counter (its sequence) and a sorted set
scored by publish time in ms (its ring); the frame goes to the group through the Channels layer exactly as it
was serialized, so a consumer forwards text without decoding it. A client that sees seq jump asks for the ring
from the time of the last frame it holds, and drops what it already has by seq.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

RING_SECONDS = 600
KEY_PREFIX = "gpulab:telemetry"


def job_group(job_id) -> str:
    return f"telemetry.job.{job_id}"


def course_group(course_id) -> str:
    return f"telemetry.course.{course_id}"


def node_group(node_id) -> str:
    return f"telemetry.node.{node_id}"


def _ring_key(group: str) -> str:
    return f"{KEY_PREFIX}:ring:{group}"


def _seq_key(group: str) -> str:
    return f"{KEY_PREFIX}:seq:{group}"


def redis_client():
    """An asyncio Redis client on the telemetry database (the same server as the channel layer)."""
    from redis import asyncio as aioredis

    return aioredis.from_url(settings.TELEMETRY_REDIS_URL, socket_timeout=5, socket_connect_timeout=5)


class Publisher:
    """Publishes frames from one event loop; keeps its Redis client and the channel layer's connections warm."""

    def __init__(self, redis=None, layer=None):
        from channels.layers import get_channel_layer

        self.redis = redis or redis_client()
        found = layer or get_channel_layer()
        if found is None:
            raise ImproperlyConfigured("Telemetry is published through a channel layer; CHANNEL_LAYERS has none.")
        self.layer = found
        self.published = 0

    async def publish(self, frames: dict[str, dict], *, now_ms: int | None = None) -> dict[str, int]:
        """Send {group: frame body} as one tick; returns the sequence number each group got."""
        if not frames:
            return {}
        import asyncio

        now_ms = now_ms or int(time.time() * 1000)
        groups = list(frames)
        async with self.redis.pipeline(transaction=False) as pipe:
            for group in groups:
                # A counter Redis lost (a restart, an expiry) starts again above any number it gave before, from
                # the clock: browsers drop frames numbered at or below the last one they drew.
                pipe.set(_seq_key(group), now_ms, nx=True)
                pipe.incr(_seq_key(group))
                pipe.expire(_seq_key(group), RING_SECONDS * 6)
            answers = await pipe.execute()
        seqs = {group: int(answers[3 * i + 1]) for i, group in enumerate(groups)}
        texts = {}
        async with self.redis.pipeline(transaction=False) as pipe:
            for group in groups:
                body = {"type": "frame", "seq": seqs[group], "t": now_ms, **frames[group]}
                text = json.dumps(body, separators=(",", ":"), allow_nan=False)
                texts[group] = text
                key = _ring_key(group)
                pipe.zadd(key, {text: now_ms})
                pipe.zremrangebyscore(key, "-inf", now_ms - RING_SECONDS * 1000)
                pipe.expire(key, RING_SECONDS)
            await pipe.execute()
        await asyncio.gather(
            *(self.layer.group_send(group, {"type": "telemetry.frame", "text": texts[group]}) for group in groups)
        )
        self.published += len(groups)
        return seqs

    async def send_log(self, job_id, offset: int, next_offset: int, data: str) -> None:
        """A new piece of a job's log; the log file is its own record, so it skips the ring."""
        text = json.dumps({"type": "log", "offset": offset, "next": next_offset, "data": data}, separators=(",", ":"))
        await self.layer.group_send(job_group(job_id), {"type": "telemetry.frame", "text": text})

    async def close(self) -> None:
        await self.redis.aclose()


async def history(redis, group: str, *, after_ms: int | None = None, seconds: int = RING_SECONDS) -> list[str]:
    """The ring's frames (JSON text, oldest first) after `after_ms`, or from the last `seconds`."""
    low = f"({after_ms}" if after_ms is not None else int(time.time() * 1000) - seconds * 1000
    return [t.decode() if isinstance(t, bytes) else t for t in await redis.zrangebyscore(_ring_key(group), low, "+inf")]


def history_message(frames: Iterable[str]) -> str:
    """Frames already serialized, joined without decoding them."""
    return '{"type":"history","frames":[' + ",".join(frames) + "]}"
