"""How many folder archives each user has under way, counted across every web process.

Walking a folder of 10,000 entries and zipping it costs the web server real CPU (SFTP listings parsed in Python). One
student's burst of folder downloads (twenty tabs, a script, a download manager retrying) must not slow everyone
else's pages, so each user holds at most GPULAB_FILES_ARCHIVES_PER_USER archives at a time; one more is refused in
words before anything is read on the cluster. The slots live in Redis (one sorted set per user, scored by when each
was last seen alive), so every web process sees the same count. A streaming archive renews its slot every
RENEW_SECONDS; one not renewed for SLOT_SECONDS belongs to a process that died mid-download (or to a give-back Redis
did not answer) and is reclaimed, so a student is never locked out for longer than that. If Redis cannot be asked
when a slot is taken, the download goes ahead: the limit protects the pages, and losing it for a moment is better
than refusing every archive.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterator

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

# A download left by its browser may keep its slot until its stream is finalized, which an ASGI server does not do at
# once: a slot not renewed for a minute is free again, and a streaming archive renews it every 15 s. (A walk of a huge
# folder that takes longer than a minute before its first byte lets one more archive in: the limit is a soft one.)
SLOT_SECONDS = 60
RENEW_SECONDS = 15
KEY = "gpulab:archive-slots:{user}"


def _redis() -> redis.Redis:
    # Longer timeouts than the metrics' client: a slot not given back holds a student's downloads for SLOT_SECONDS.
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=3, socket_connect_timeout=3)


# Atomic across web processes: drop slots past their age, then take one if fewer than the limit are held.
_TAKE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1] - ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""


class Slot:
    """One archive under way; give_back() (idempotent) when it has ended, however it ended."""

    def __init__(self, user_id: int, token: str | None):
        self.user_id, self.token = user_id, token
        self.renewed = time.monotonic()

    def renew(self) -> None:
        """Still streaming: the slot's age starts again (at most once a RENEW_SECONDS)."""
        if self.token is None or time.monotonic() - self.renewed < RENEW_SECONDS:
            return
        self.renewed = time.monotonic()
        try:
            _redis().zadd(KEY.format(user=self.user_id), {self.token: time.time()}, xx=True)
        except (redis.RedisError, OSError):
            logger.warning("archive slots: could not renew a slot of user %s", self.user_id, exc_info=True)

    def give_back(self) -> None:
        token, self.token = self.token, None
        if token is None:
            return
        try:
            _redis().zrem(KEY.format(user=self.user_id), token)
        except (redis.RedisError, OSError):  # it ages out after SLOT_SECONDS
            logger.warning("archive slots: could not give back a slot of user %s", self.user_id, exc_info=True)

    def holding(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """`chunks`, with the slot given back once they are closed or run out, even if never started."""
        return _Held(chunks, self)


class _Held:
    def __init__(self, chunks: Iterator[bytes], slot: Slot):
        self.chunks, self.slot = chunks, slot

    def __iter__(self) -> _Held:
        return self

    def __next__(self) -> bytes:
        try:
            chunk = next(self.chunks)
        except StopIteration:
            self.slot.give_back()
            raise
        self.slot.renew()
        return chunk

    def close(self) -> None:
        try:
            close = getattr(self.chunks, "close", None)
            if callable(close):
                close()
        finally:
            self.slot.give_back()


def take(user_id: int) -> Slot | None:
    """A slot for one more archive of this user's, or None when they already hold as many as allowed."""
    limit = settings.GPULAB_FILES_ARCHIVES_PER_USER
    token = secrets.token_hex(8)
    try:
        taken = _redis().eval(
            _TAKE, 1, KEY.format(user=user_id), f"{time.time():.3f}", str(SLOT_SECONDS), str(limit), token
        )
    except (redis.RedisError, OSError):
        logger.warning("archive slots: Redis did not answer; the archive of user %s goes ahead", user_id)
        return Slot(user_id, None)
    return Slot(user_id, token) if taken else None


def refusal() -> str:
    limit = settings.GPULAB_FILES_ARCHIVES_PER_USER
    under_way = "one folder download" if limit == 1 else f"{limit} folder downloads"
    return f"You already have {under_way} under way; wait for one to finish, then try again."
