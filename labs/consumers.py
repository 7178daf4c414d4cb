"""The progress grid's socket: the course's teachers (instructors, TAs, admins) join one lab's group; anyone else is
refused before the handshake completes, with the same 404 the grid page gives."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.http import Http404

from .access import get_lab
from .live import lab_group


class LabGridConsumer(AsyncWebsocketConsumer):
    group: str | None = None

    async def connect(self):
        try:
            self.group = await database_sync_to_async(self._authorize)(self.scope["user"], self.scope["url_route"])
        except Http404:
            self.group = None
        if self.group is None:
            await self.close(code=4404)
            return
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    @staticmethod
    def _authorize(user, route) -> str:
        kwargs = route["kwargs"]
        return lab_group(get_lab(user, kwargs["slug"], kwargs["lab_slug"], teach=True).pk)

    async def disconnect(self, code):
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def lab_row(self, event):
        await self.send(text_data=event["text"])
