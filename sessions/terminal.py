"""The job terminal's WebSocket: xterm.js in the page <-> a PTY inside the running job (the kind's open_terminal).

Invariant: the access helper (jobs/access.get_job_terminal) answers before the handshake completes; another
student's job is refused with the same close code as a missing one (4404). One socket relays one PTY and owns it:
the PTY closes with the socket, and the socket closes (saying why in the page) when the shell exits, the job stops
running, or nobody typed for GPULAB_TERMINAL_IDLE_SECONDS. An instructor's terminal is recorded on the job's
timeline before it opens, and told to the student's open terminals (the job's group), so the student sees who looked.

The socket's query names the screen's size (cols, rows) and, where the kind offers a choice (a pod's containers),
the target; the kind checks that the target is the job's own.

Wire: the browser sends keys as binary frames (UTF-8, as typed or pasted) and {"resize": [cols, rows]} as a text
frame; the portal sends the PTY's output as binary frames and {"closed": "<why>"} (or {"notice": "<text>"}) as text
frames. Keys cost no JSON, no database and no channel layer: the access helper answered at connect, and _watch
checks the job on its own clock. Keys are read in a loop of their own (__call__), and the PTY's output is sent from
the reader's callback by one long-lived task: a key and its echo each wake one task (bench/terminal.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from channels.db import database_sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import Http404

from clusters import kinds
from clusters.backends.base import BackendError
from clusters.backends.kind import KindRefusal
from core.choices import EventKind, JobState
from jobs import access, states

if TYPE_CHECKING:
    from clusters.backends.terminal import Terminal

logger = logging.getLogger(__name__)

SMALL_WRITE = 1024  # bytes: keystrokes; larger input (a paste) is written from a thread


def _authorize(user, job_id):
    job, as_staff = access.get_job_terminal(user, job_id)
    return job, as_staff


def _still_running(job) -> bool:
    job.refresh_from_db(fields=["state"])
    return job.state == JobState.RUNNING


def _signed_in_still(user_id: int, token_key: object) -> bool:
    """The user is still active and, for a terminal opened with an API token (gpulab shell), the token still exists:
    replacing it or `gpulab logout` ends the shell it opened, as the profile page says it stops working at once."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    if not get_user_model().objects.filter(pk=user_id, is_active=True).exists():
        return False
    return token_key is None or Token.objects.filter(key=token_key, user_id=user_id).exists()


def _record_staff_terminal(job, user) -> str:
    note = f"{user.get_full_name() or user.username} (instructor) opened a terminal in this job."
    states.record(job, EventKind.NOTE, note, actor=user)
    return note


def _size(query: dict, name: str, default: int) -> int:
    try:
        return int(query.get(name, default))
    except (TypeError, ValueError):
        return default


class TerminalConsumer(AsyncWebsocketConsumer):
    term: Terminal | None = None
    group = ""
    as_staff = False
    tasks: list[asyncio.Task] = []

    async def connect(self):
        user, job_id = self.scope["user"], self.scope["url_route"]["kwargs"]["job_id"]
        try:
            self.job, as_staff = await database_sync_to_async(_authorize)(user, job_id)
        except Http404:
            await self.close(code=4404)
            return
        except PermissionDenied:
            await self.close(code=4403)
            return
        # One group per job's terminals: an instructor's arrival is told to the student's open terminal.
        self.group, self.as_staff = f"terminal.job.{self.job.pk.hex}", as_staff
        assert user is not None  # the auth middleware always sets it; _authorize refused anyone signed out
        self.opener_id: int = user.pk  # who opened it: their sign-in is checked on the terminal's own clock
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        if not await database_sync_to_async(_still_running)(self.job):
            await self.finish("This job is not running, so there is no shell to open. Launch it again to get one.")
            return
        if as_staff:
            note = await database_sync_to_async(_record_staff_terminal)(self.job, user)
            await self.channel_layer.group_send(self.group, {"type": "staff.opened", "text": note})
        query = dict(parse_qsl(self.scope["query_string"].decode()))
        cols, rows, target = _size(query, "cols", 80), _size(query, "rows", 24), query.get("target", "")
        try:
            kind = kinds.kind_of(self.job.cluster.kind)
            self.term = await asyncio.to_thread(kind.open_terminal, self.job, cols=cols, rows=rows, target=target)
        except (KindRefusal, BackendError) as exc:
            await self.finish(str(exc))
            return
        self.last_input = time.monotonic()
        self.output, self.output_ready, self.output_ended = bytearray(), asyncio.Event(), False
        asyncio.get_running_loop().add_reader(self.term.fileno(), self._output_ready)
        self.tasks = [asyncio.create_task(self._pump()), asyncio.create_task(self._watch())]

    async def __call__(self, scope, receive, send):
        """Channels' consumer loop, with the browser's messages awaited on their own. Channels waits on the socket and
        the channel layer together, with asyncio.wait and a new task for every message: a key woke the receiving
        task, then the consumer's, and started the next receiving task before it reached the PTY. The channel
        layer, which carries only an instructor's arrival, is read by a task of its own."""
        self.scope, self.base_send = scope, send
        # None without CHANNEL_LAYERS, as Channels' own loop stores it; its stubs type the attribute as always set
        self.channel_layer = get_channel_layer(self.channel_layer_alias)  # type: ignore[assignment]
        layer = None
        if self.channel_layer is not None:
            self.channel_name = await self.channel_layer.new_channel()
            layer = asyncio.create_task(self._layer_messages())
        try:
            while True:
                await self.dispatch(await receive())
        except StopConsumer:
            pass
        finally:
            self._release()  # however the loop ended (a write to a PTY that died raises): no ssh or task left behind
            if layer is not None:
                layer.cancel()
                await asyncio.wait([layer])

    async def _layer_messages(self) -> None:
        """Group messages for this socket, each on its own: one that fails is logged, and the next still arrives."""
        while True:
            message = await self.channel_layer.receive(self.channel_name)
            try:
                await super().dispatch(message)
            except Exception:
                logger.exception("terminal: the group message %r was not delivered", message.get("type"))

    async def dispatch(self, message):
        # A keystroke touches no database, so it skips Channels' close_old_connections (a hop to a worker thread and
        # back, about 0.2 ms on every key); connect, close and group messages still go through it.
        if message["type"] == "websocket.receive":
            await self.websocket_receive(message)
        else:
            await super().dispatch(message)

    def _output_ready(self) -> None:
        """The PTY has output or ended: add it to what _pump sends next."""
        if self.term is None:  # released: its reader is gone
            return
        self.output += self.term.read()
        if self.term.ended:
            self._stop_reading()
            self.output_ended = True
        self.output_ready.set()

    async def _pump(self) -> None:
        """Send the PTY's output in order, as one frame whatever arrived while the last one went out."""
        while self.output or not self.output_ended:
            await self.output_ready.wait()
            self.output_ready.clear()
            if self.output:
                data, self.output = bytes(self.output), bytearray()
                await self.send(bytes_data=data)
        term = self.term  # the thread reads this one, even if the socket closes meanwhile
        failure = await asyncio.to_thread(lambda: term.failure) if term is not None else ""
        await self.finish(
            failure
            or "The shell has ended: it exited, or the job's allocation ended. If the job still runs, reload the page "
            "for a new shell."
        )

    async def _watch(self) -> None:
        """Close the terminal when the job stops running or nobody has typed for the idle limit."""
        idle_limit = settings.GPULAB_TERMINAL_IDLE_SECONDS
        while True:
            await asyncio.sleep(min(settings.GPULAB_TERMINAL_CHECK_SECONDS, idle_limit))
            if time.monotonic() - self.last_input >= idle_limit:
                minutes = max(1, round(idle_limit / 60))
                await self.finish(f"Closed after {minutes} min without typing. Reload the page to open a new one.")
                return
            if not await database_sync_to_async(_still_running)(self.job):
                await self.finish("The job has ended, so its terminal is closed. Its files stay in the run directory.")
                return
            token_key = self.scope.get("api_token")
            if not await database_sync_to_async(_signed_in_still)(self.opener_id, token_key):
                await self.finish("Your sign-in ended (the API token was replaced or revoked, or the account closed).")
                return

    async def receive(self, text_data=None, bytes_data=None):
        if self.term is None:
            return
        if bytes_data is not None:  # keys, as typed or pasted: written as they came, no parsing on the echo's path
            self.last_input = time.monotonic()
            if len(bytes_data) <= SMALL_WRITE:
                self.term.write(bytes_data)  # a keystroke fits the channel's window: no thread hop on the echo's path
            else:
                await asyncio.to_thread(self.term.write, bytes_data)  # a paste may wait for the window to open
            return
        try:
            message = json.loads(text_data or "{}")
        except ValueError:
            return
        resize = message.get("resize") if isinstance(message, dict) else None
        if isinstance(resize, list) and len(resize) == 2:
            with contextlib.suppress(TypeError, ValueError):
                self.term.resize(int(resize[0]), int(resize[1]))

    async def staff_opened(self, event) -> None:
        """An instructor opened a terminal in this job: the student's own terminal says so."""
        if not self.as_staff:
            with contextlib.suppress(RuntimeError):  # the socket closed meanwhile: nobody is left to tell
                await self.send(text_data=json.dumps({"notice": event["text"]}))

    async def finish(self, why: str) -> None:
        """Tell the page why the terminal closed, then close the socket (and the PTY with it)."""
        with contextlib.suppress(Exception):
            await self.send(text_data=json.dumps({"closed": why}))
        await self.close(code=1000)
        self._release()

    def _stop_reading(self) -> None:
        if self.term is not None:
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(self.term.fileno())

    def _release(self) -> None:
        self._stop_reading()
        if self.term is not None:
            self.term.close()
            self.term = None
        for task in self.tasks:
            if task is not asyncio.current_task():
                task.cancel()

    async def disconnect(self, code):
        self._release()
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)
