"""The trainer's curve per job (epoch, step, loss, tok/s), kept in telemetry's Redis for the whole run.

The collector appends the points it parses from rank 0's log line; the job page reads the last few to say how far
a run got (and, once they have expired, the last step of the job's stored series), and the job's telemetry socket
sends them all to a page opened late, so it still shows epoch 1. The list lives below telemetry so that jobs reads it
without importing the telemetry app.
"""

from __future__ import annotations

import functools
import json

from django.conf import settings

CURVE_POINTS = 5000
CURVE_SECONDS = 86400
KEY_PREFIX = "gpulab:telemetry"  # the telemetry database's prefix (telemetry/stream.py)
LOSS_CHART = "loss"  # the stored chart whose x is the trainer's step (static/js/telemetry-charts.json)


def _curve_key(job_id) -> str:
    return f"{KEY_PREFIX}:curve:{job_id}"


def add_curve_points(pipe, job_id, points: list[dict]) -> None:
    key = _curve_key(job_id)
    pipe.rpush(key, *(json.dumps(p, separators=(",", ":")) for p in points))
    pipe.ltrim(key, -CURVE_POINTS, -1)
    pipe.expire(key, CURVE_SECONDS)


async def curve_points(redis, job_id) -> list[dict]:
    return [json.loads(p) for p in await redis.lrange(_curve_key(job_id), 0, -1)]


def recent_curve_points(job_id, count: int = 10) -> list[dict]:
    """The job's last `count` trainer points, oldest first, for pages (synchronous). Empty if Redis is away: a page
    then shows no step rather than failing."""
    import redis

    try:
        raw = _sync_client().lrange(_curve_key(job_id), -count, -1)
    except (redis.RedisError, OSError):
        return []
    return [json.loads(p) for p in raw]


def stored_curve_points(job) -> list[dict]:
    """The job's last trainer step as its stored series keep it (the loss chart, by step), for a job whose curve has
    left Redis (a day after it ran): one query, none of the chunks' other charts read. Empty without a loss chart."""
    stored = (
        job.series_chunks.filter(series__has_key=LOSS_CHART)
        .order_by("-end")
        .values_list(f"series__{LOSS_CHART}", flat=True)
        .first()
    )
    steps = [x for trace in (stored or {}).values() if isinstance(trace, dict) for x in trace.get("x") or []]
    return [{"step": max(steps)}] if steps else []


@functools.cache
def _sync_client():
    import redis

    return redis.Redis.from_url(settings.TELEMETRY_REDIS_URL, socket_timeout=1, socket_connect_timeout=1)


def latest_curve_points(job_ids) -> dict[str, dict]:
    """Each job's newest trainer point, in one round trip for a whole table; jobs without one are left out, and a
    Redis that is away gives {} (the table then shows no result rather than failing)."""
    import redis

    ids = [str(job_id) for job_id in job_ids]
    if not ids:
        return {}
    try:
        pipe = _sync_client().pipeline(transaction=False)
        for job_id in ids:
            pipe.lrange(_curve_key(job_id), -1, -1)
        answers = pipe.execute()
    except (redis.RedisError, OSError):
        return {}
    return {job_id: json.loads(raw[0]) for job_id, raw in zip(ids, answers, strict=True) if raw}
