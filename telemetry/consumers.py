"""WebSocket consumers: each asks the access helper before joining a group, then forwards frames as they are.

A socket joins exactly one group (job, course or node); anything the user may not see is refused before the
handshake completes, the same 404 the pages give.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.http import Http404

from core.measurements import SocketGauge
from jobs import access, trainer_curve

from . import recorder, series, stream
from .access import get_node

_clients: dict[int, object] = {}
open_sockets = SocketGauge()


def _redis():
    """One Redis client per event loop (a web process serves every socket from one loop)."""
    loop = asyncio.get_running_loop()
    client = _clients.get(id(loop))
    if client is None:
        client = _clients[id(loop)] = stream.redis_client()
    return client


class TelemetryConsumer(AsyncWebsocketConsumer):
    history_seconds = stream.RING_SECONDS
    group: str | None = None
    counted = False  # in open_sockets

    async def connect(self):
        try:
            self.group = await database_sync_to_async(self.authorize)(self.scope["user"], self.scope["url_route"])
        except Http404:
            self.group = None
        if self.group is None:
            await self.close(code=4404)
            return
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self.counted = True
        await open_sockets.changed(+1)
        await self.send(text_data=await self.first_message())

    async def first_message(self) -> str:
        """What the page draws first: the ring's frames as they are."""
        return stream.history_message(await self._history(None, self.history_seconds))

    def authorize(self, user, route) -> str | None:
        """The group this user may watch, or None / Http404."""
        raise NotImplementedError

    async def disconnect(self, code):
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)
        if self.counted:
            self.counted = False
            await open_sockets.changed(-1)

    async def receive(self, text_data=None, bytes_data=None):
        """{"resync": <t of the last frame held>}: the client saw a gap in seq and wants the frames after it."""
        try:
            after = int(json.loads(text_data or "{}")["resync"])
        except (ValueError, KeyError, TypeError):
            return
        await self.send(text_data=stream.history_message(await self._history(after, self.history_seconds)))

    async def _history(self, after_ms: int | None, seconds: int) -> list[str]:
        if self.group is None:  # refused at connect: nothing of anyone's
            return []
        try:
            return await stream.history(_redis(), self.group, after_ms=after_ms, seconds=seconds)
        except OSError:
            return []  # Redis restarting: live frames resume by themselves, the page just opens without history

    async def telemetry_frame(self, event):
        await self.send(text_data=event["text"])


class SeriesConsumer(TelemetryConsumer):
    """Opens with every chart's history at once: stored series, then the ring after them, downsampled."""

    owner: dict
    recorded = False

    async def first_message(self) -> str:
        ring = await self._history(None, self.history_seconds)
        stored, end = await database_sync_to_async(recorder.stored)(**self.owner)
        extra = await self.extra_frames()
        return await asyncio.to_thread(self._series_text, stored, end, ring, extra)

    async def extra_frames(self) -> list[dict]:
        return []

    def _series_text(self, stored, end, ring: list[str], extra: list[dict]) -> str:
        frames = [json.loads(text) for text in ring]
        series.add_frames(stored, frames, after_ms=end if end is not None else float("-inf"))
        series.add_frames(stored, extra)
        last = frames[-1] if frames else None
        return json.dumps(series.message(stored, recorded=self.recorded, last=last), separators=(",", ":"))


class JobTelemetryConsumer(SeriesConsumer):
    def authorize(self, user, route):
        job = access.get_job(user, route["kwargs"]["job_id"])
        self.owner, self.job_id, self.recorded = {"job": job}, job.pk, not job.is_active
        return stream.job_group(job.pk)

    async def extra_frames(self) -> list[dict]:
        """The trainer's curve kept in Redis for a day: points the stored chunks may not hold yet."""
        with contextlib.suppress(OSError):
            return [{"trainer": await trainer_curve.curve_points(_redis(), self.job_id)}]
        return []


class CourseTelemetryConsumer(TelemetryConsumer):
    history_seconds = 300  # the dashboard's heatmap spans five minutes

    def authorize(self, user, route):
        course = access.get_course(user, route["kwargs"]["slug"], teach=True)
        return stream.course_group(course.pk)


class NodeTelemetryConsumer(SeriesConsumer):
    def authorize(self, user, route):
        node = get_node(user, route["kwargs"]["node_id"])
        self.owner = {"node": node}
        return stream.node_group(node.pk)
