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

from . import recorder, resync, series, stream
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
    resyncs: resync.Coalescer | None = None
    resync_interval = resync.INTERVAL_SECONDS

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
        return stream.history_message(await self._history(self.history_seconds))

    def authorize(self, user, route) -> str | None:
        """The group this user may watch, or None / Http404."""
        raise NotImplementedError

    async def disconnect(self, code):
        if self.resyncs is not None:
            await self.resyncs.stop()
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)
        if self.counted:
            self.counted = False
            await open_sockets.changed(-1)

    async def receive(self, text_data=None, bytes_data=None):
        """{"resync": <t of the last frame held>}: the client saw a gap in seq and wants the frames after it. A value
        that is not a time is ignored; the answer is bounded and coalesced to one a second (telemetry/resync.py)."""
        after = resync.requested_after(text_data)
        if after is None:
            return
        if self.resyncs is None:
            self.resyncs = resync.Coalescer(self._answer_resync, self.resync_interval)
        self.resyncs.ask(after)

    async def _answer_resync(self, after_ms: int) -> None:
        if self.group is None:  # refused at connect: nothing of anyone's
            return
        try:
            text = await self.missed(self.group, after_ms)
        except OSError:
            return  # Redis restarting: live frames resume by themselves
        with contextlib.suppress(RuntimeError):  # the socket closed meanwhile: nobody is left to answer
            await self.send(text_data=text)

    async def missed(self, group: str, after_ms: int) -> str:
        """A resync's answer: the ring's newest frames after that time, a bounded piece."""
        frames = await stream.newest(_redis(), group, after_ms=after_ms, limit=resync.MAX_FRAMES)
        return stream.history_message(frames)

    async def _history(self, seconds: int) -> list[str]:
        if self.group is None:  # refused at connect: nothing of anyone's
            return []
        try:
            return await stream.history(_redis(), self.group, seconds=seconds)
        except OSError:
            return []  # Redis restarting: live frames resume by themselves, the page just opens without history

    async def telemetry_frame(self, event):
        await self.send(text_data=event["text"])


class SeriesConsumer(TelemetryConsumer):
    """Opens with every chart's history at once: stored series, then the ring after them, downsampled."""

    owner: dict
    recorded = False

    async def first_message(self) -> str:
        ring = await self._history(self.history_seconds)
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
    """Opens with the dashboard's heat (its five minutes of cells, telemetry/heat.py), and a resync gets it again:
    each cell is the newest sample of its column, so the heat is all a page that missed frames lacks."""

    def authorize(self, user, route):
        course = access.get_course(user, route["kwargs"]["slug"], teach=True)
        return stream.course_group(course.pk)

    async def first_message(self) -> str:
        if self.group is None:  # refused at connect: nothing of anyone's
            return stream.EMPTY_HEAT
        try:
            return await stream.heat(_redis(), self.group)
        except OSError:
            return stream.EMPTY_HEAT  # Redis restarting: live frames fill the columns from now on

    async def missed(self, group: str, after_ms: int) -> str:
        return await stream.heat(_redis(), group)


class NodeTelemetryConsumer(SeriesConsumer):
    def authorize(self, user, route):
        node = get_node(user, route["kwargs"]["node_id"])
        self.owner = {"node": node}
        return stream.node_group(node.pk)
