"""Fan-out of telemetry: one pre-serialized frame per group per tick, a 10-minute ring in Redis, sequence numbers.

A frame is JSON text built once by the collector. Each group has a Redis counter (its sequence) and a sorted set
scored by publish time in ms (its ring); the frame goes to the group through the Channels layer exactly as it
was serialized, so a consumer forwards text without decoding it. A client that sees seq jump asks for the ring
from the time of the last frame it holds (answered in bounded pieces, telemetry/resync.py), and drops what it
already has by seq. A course group keeps its heat instead of a ring (telemetry/heat.py): the class dashboard's
five minutes of cells, one message, which its socket opens with and a resync gets.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from .heat import KEPT_SECONDS, CourseHeat

RING_SECONDS = 600
KEY_PREFIX = "gpulab:telemetry"
EMPTY_HEAT = CourseHeat().text()  # a course group's before its first frame


def job_group(job_id) -> str:
    return f"telemetry.job.{job_id}"


COURSE_GROUP_PREFIX = "telemetry.course."


def course_group(course_id) -> str:
    return f"{COURSE_GROUP_PREFIX}{course_id}"


def keeps_heat(group: str) -> bool:
    """A course group: its history is the dashboard's heat, not a ring of frames."""
    return group.startswith(COURSE_GROUP_PREFIX)


def node_group(node_id) -> str:
    return f"telemetry.node.{node_id}"


def _ring_key(group: str) -> str:
    return f"{KEY_PREFIX}:ring:{group}"


def _seq_key(group: str) -> str:
    return f"{KEY_PREFIX}:seq:{group}"


def _heat_key(group: str) -> str:
    return f"{KEY_PREFIX}:heat:{group}"


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
        self.heats: dict[str, CourseHeat] = {}  # course groups' heat, carried on from Redis when first published

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
        await self._load_heats([group for group in groups if keeps_heat(group) and group not in self.heats])
        texts = {}
        async with self.redis.pipeline(transaction=False) as pipe:
            for group in groups:
                body = {"type": "frame", "seq": seqs[group], "t": now_ms, **frames[group]}
                text = json.dumps(body, separators=(",", ":"), allow_nan=False)
                texts[group] = text
                if keeps_heat(group):
                    heat = self.heats[group]
                    heat.add(body)
                    pipe.set(_heat_key(group), heat.text(), ex=KEPT_SECONDS)
                    continue
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

    async def _load_heats(self, groups: list[str]) -> None:
        """A publisher that starts again (the collector restarted) goes on from the heat it stored before."""
        if groups:
            stored = await self.redis.mget([_heat_key(group) for group in groups])
            self.heats.update({group: CourseHeat.from_text(text) for group, text in zip(groups, stored, strict=True)})

    async def send_log(self, job_id, offset: int, next_offset: int, data: str) -> None:
        """A new piece of a job's log; the log file is its own record, so it skips the ring."""
        text = json.dumps({"type": "log", "offset": offset, "next": next_offset, "data": data}, separators=(",", ":"))
        await self.layer.group_send(job_group(job_id), {"type": "telemetry.frame", "text": text})

    async def close(self) -> None:
        await self.redis.aclose()


async def history(redis, group: str, *, seconds: int = RING_SECONDS) -> list[str]:
    """The ring's frames (JSON text, oldest first) from the last `seconds`: what a page opens with."""
    low = int(time.time() * 1000) - seconds * 1000
    return [t.decode() if isinstance(t, bytes) else t for t in await redis.zrangebyscore(_ring_key(group), low, "+inf")]


async def newest(redis, group: str, *, after_ms: int, limit: int) -> list[str]:
    """At most `limit` of the ring's newest frames after `after_ms` (JSON text, oldest first)."""
    texts = await redis.zrevrangebyscore(_ring_key(group), "+inf", f"({after_ms}", start=0, num=limit)
    return [t.decode() if isinstance(t, bytes) else t for t in reversed(texts)]


async def heat(redis, group: str) -> str:
    """A course group's heat message (JSON text, telemetry/heat.py); an empty one before its first frame."""
    text = await redis.get(_heat_key(group))
    if text is None:
        return EMPTY_HEAT
    return text.decode() if isinstance(text, bytes) else text


def history_message(frames: Iterable[str]) -> str:
    """Frames already serialized, joined without decoding them."""
    return '{"type":"history","frames":[' + ",".join(frames) + "]}"
