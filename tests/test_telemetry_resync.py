"""A telemetry socket's resync, {"resync": <t>}, whatever a browser sends: no value closes the socket with a server
error, no answer returns the whole ring, and a socket gets at most one answer a second (later asks coalesced)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from asgiref.testing import ApplicationCommunicator
from channels.db import database_sync_to_async
from django.db import connections

from telemetry import consumers, resync
from telemetry.consumers import CourseTelemetryConsumer, TelemetryConsumer
from telemetry.heat import CourseHeat
from telemetry.wire import CourseFrame, CourseRow

pytestmark = pytest.mark.django_db(transaction=True)  # the consumer's access check runs on a database thread

RING = 600  # ten minutes of frames, one a second


class FakeRing:
    """The Redis calls the consumer makes, on one group's ring of `RING` frames of about 600 bytes each."""

    def __init__(self, now_ms: int):
        pad = "x" * 560
        self.frames = [(now_ms - (RING - i) * 1000, i) for i in range(RING)]
        self.texts = {seq: json.dumps({"type": "frame", "seq": seq, "t": t, "pad": pad}) for t, seq in self.frames}
        self.heat: CourseHeat | None = None  # a course group's, once published

    def _between(self, low, high) -> list[str]:
        def bound(text):  # Redis's syntax: "(5" excludes 5
            text = str(text)
            return (float(text[1:]), False) if text.startswith("(") else (float(text), True)

        (lo, lo_in), (hi, hi_in) = bound(low), bound(high)
        return [
            self.texts[seq]
            for t, seq in self.frames
            if (t > lo or (lo_in and t == lo)) and (t < hi or (hi_in and t == hi))
        ]

    async def zrangebyscore(self, key, low, high):
        return self._between(low, high)

    async def zrevrangebyscore(self, key, high, low, start=0, num=None):
        found = list(reversed(self._between(low, high)))
        return found[start : start + num] if num is not None else found

    async def get(self, key):
        assert key.endswith(":heat:telemetry.course.probe")
        return self.heat.text().encode() if self.heat else None


class Probe(TelemetryConsumer):
    def authorize(self, user, route):
        return "telemetry.job.probe"


class CourseProbe(CourseTelemetryConsumer):
    def authorize(self, user, route):
        return "telemetry.course.probe"


@pytest.fixture
def ring(monkeypatch, settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    fake = FakeRing(int(time.time() * 1000))
    monkeypatch.setattr(consumers, "_redis", lambda: fake)
    return fake


async def _open(consumer=Probe) -> ApplicationCommunicator:
    communicator, _first = await _open_with_first(consumer)
    return communicator


async def _open_with_first(consumer=Probe) -> tuple[ApplicationCommunicator, dict]:
    scope = {"type": "websocket", "path": "/ws/probe/", "headers": [], "subprotocols": [], "query_string": b""}
    communicator = ApplicationCommunicator(consumer.as_asgi(), {**scope, "user": None, "url_route": {"kwargs": {}}})
    await communicator.send_input({"type": "websocket.connect"})
    assert (await communicator.receive_output(timeout=10))["type"] == "websocket.accept"
    first = await communicator.receive_output(timeout=10)  # the page's first history
    return communicator, json.loads(first["text"])


async def _close(communicator: ApplicationCommunicator) -> None:
    await communicator.send_input({"type": "websocket.disconnect", "code": 1000})
    await communicator.wait(timeout=5)
    await database_sync_to_async(connections.close_all)()  # the worker thread's connection, before the test db goes


async def _ask(communicator: ApplicationCommunicator, text: str) -> None:
    await communicator.send_input({"type": "websocket.receive", "text": text})


def _frames(answer: dict) -> list[dict]:
    message = json.loads(answer["text"])
    assert message["type"] == "history"
    return message["frames"]


NOT_A_TIME = ['{"resync": 1e400}', '{"resync": -1e400}', '{"resync": NaN}', '{"resync": "soon"}', '{"resync": true}',
              '{"resync": null}', '{"resync": [1]}', "not json", '"resync"']  # fmt: skip


@pytest.mark.parametrize("text", [*NOT_A_TIME, pytest.param("[" * 100_000 + "]" * 100_000, id="nested-deep")])
def test_a_resync_that_is_not_a_time_is_ignored_and_the_socket_stays_open(ring, text):
    async def run():
        communicator = await _open()
        await _ask(communicator, text)
        assert await communicator.receive_nothing(timeout=0.3)
        await _ask(communicator, json.dumps({"resync": ring.frames[-3][0]}))
        answer = await communicator.receive_output(timeout=5)
        await _close(communicator)
        return answer

    assert [f["seq"] for f in _frames(asyncio.run(run()))] == [RING - 2, RING - 1]


@pytest.mark.parametrize("value", [0, -5, -(10**30), 1.5])
def test_a_resync_from_long_ago_answers_a_bounded_piece_of_the_ring(ring, value):
    async def run():
        communicator = await _open()
        await _ask(communicator, json.dumps({"resync": value}))
        answer = await communicator.receive_output(timeout=5)
        await _close(communicator)
        return answer

    answer = asyncio.run(run())
    frames = _frames(answer)
    assert 0 < len(frames) <= resync.MAX_FRAMES and len(answer["text"]) < 100_000  # the ring is 367 KB
    assert frames[-1]["seq"] == RING - 1 and frames[0]["t"] >= ring.frames[-1][0] - resync.WINDOW_SECONDS * 1000


def test_a_resync_from_the_far_future_answers_nothing_new(ring):
    async def run():
        communicator = await _open()
        await _ask(communicator, '{"resync": ' + "9" * 400 + "}")
        answer = await communicator.receive_output(timeout=5)
        await _close(communicator)
        return answer

    assert _frames(asyncio.run(run())) == []


def test_resyncs_are_answered_at_most_once_a_second_and_later_ones_coalesced(ring):
    async def run():
        communicator = await _open()
        asked = [ring.frames[-2][0], ring.frames[-5][0], ring.frames[-3][0], ring.frames[-4][0]]
        for after in asked:
            await _ask(communicator, json.dumps({"resync": after}))
        first = await communicator.receive_output(timeout=5)
        started = time.monotonic()
        quiet = await communicator.receive_nothing(timeout=0.6)
        second = await communicator.receive_output(timeout=5)
        waited = time.monotonic() - started
        nothing_more = await communicator.receive_nothing(timeout=1.3)
        await _close(communicator)
        return first, quiet, second, waited, nothing_more

    first, quiet, second, waited, nothing_more = asyncio.run(run())
    assert [f["seq"] for f in _frames(first)] == [RING - 1]
    assert quiet and waited >= 0.3 and nothing_more
    assert [f["seq"] for f in _frames(second)] == [RING - 4, RING - 3, RING - 2, RING - 1]  # from the earliest asked


@pytest.mark.parametrize(
    ("value", "expected"), [(9500, 9500), (9500.7, 9500), (20_000, 10_000), (0, 9000), (-(10**400), 9000)]
)
def test_requested_after_clamps_into_the_window_before_now(value, expected):
    text = json.dumps({"resync": value})
    assert resync.requested_after(text, now_ms=10_000, window_seconds=1) == expected


def test_a_course_socket_opens_with_the_dashboards_heat_and_a_resync_gets_the_heat_again(ring):
    async def run():
        before, empty = await _open_with_first(CourseProbe)  # no frame published yet: an empty heat
        await _close(before)
        ring.heat = CourseHeat()
        course = CourseFrame([CourseRow("ada", "a1", "gpu1/0", 55.0, 10.0, False, 0)], None).to_wire()
        ring.heat.add({"seq": 41, "t": ring.frames[-1][0], **course})
        communicator, first = await _open_with_first(CourseProbe)
        await _ask(communicator, json.dumps({"resync": ring.frames[-30][0]}))
        again = json.loads((await communicator.receive_output(timeout=5))["text"])
        await _close(communicator)
        return empty, first, again

    empty, first, again = asyncio.run(run())
    assert empty == {"type": "heat", "gpus": []}
    assert first["type"] == again["type"] == "heat" and first["seq"] == again["seq"] == 41
    assert first["gpus"][0]["util"][-1] == 55.0 and "frames" not in first
