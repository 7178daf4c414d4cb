"""What one person may upload, counted on the server from what arrives, never from what the client declares.

Invariant: every new file (its first chunk, at offset 0) is recorded in a Redis sorted set per user, scored by when
it started; more than GPULAB_FILES_MAX_UPLOAD_COUNT files started within GPULAB_FILES_UPLOAD_WINDOW_SECONDS is
refused (the page uploads a selection of files one after another, so one selection is one window's worth). A chunk
is a request body: it must say its length, which is at most GPULAB_FILES_CHUNK_BYTES, and it is streamed to the
cluster 1 MiB at a time, never held whole (DATA_UPLOAD_MAX_MEMORY_SIZE bounds the bodies the portal reads into
memory: the API's JSON and forms).
"""

from __future__ import annotations

import time

import redis
from django.conf import settings

from core import measurements

from .files import FilesUnavailable
from .paths import PathRefused

KEY = "gpulab:files:uploads:{user}"


class ChunkTooLarge(PathRefused):
    """The body is over GPULAB_FILES_CHUNK_BYTES, or does not say its length."""


def chunk_length(meta) -> int:
    """The declared length of an upload chunk's body, within the limit; ChunkTooLarge otherwise."""
    limit = settings.GPULAB_FILES_CHUNK_BYTES
    try:
        length = int(meta.get("CONTENT_LENGTH") or "")
    except ValueError:
        raise ChunkTooLarge("Send each chunk with its Content-Length (the page does).") from None
    if length > limit:
        size = f"{limit // 2**20} MiB" if limit >= 2**20 else f"{limit // 1024} KiB"
        raise ChunkTooLarge(f"A chunk carries at most {size} ({limit} bytes); send the file in chunks of that size.")
    return length


def count_new_file(user_id: int, file_key: str) -> None:
    """Record a file this user starts uploading; PathRefused when it is one too many for the window."""
    window, most = settings.GPULAB_FILES_UPLOAD_WINDOW_SECONDS, settings.GPULAB_FILES_MAX_UPLOAD_COUNT
    key, now = KEY.format(user=user_id), time.time()
    try:
        with measurements.client().pipeline() as pipe:  # MULTI/EXEC: the count includes this file, atomically
            pipe.zremrangebyscore(key, 0, now - window)
            pipe.zadd(key, {file_key: now}, nx=True)
            pipe.zcard(key)
            pipe.expire(key, int(window) + 1)
            _, added, started, _ = pipe.execute()
        if added and started > most:
            measurements.client().zrem(key, file_key)  # refused: it does not use up a place
    except (redis.RedisError, OSError):
        raise FilesUnavailable("The portal cannot count uploads right now; try again in a minute.") from None
    if added and started > most:
        minutes = max(1, round(window / 60))
        raise PathRefused(
            f"Upload at most {most} files within {minutes} min; zip a large set and upload the archive, or wait a "
            "few minutes."
        )
