"""The class's progress grid over its socket: a teacher's socket gets a student's row when one of their runs moves,
without a reload; a student's socket, or one for another course, is refused before the handshake completes."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.testing import ApplicationCommunicator
from channels.db import database_sync_to_async
from django.db import connections

from core.choices import JobState
from jobs.states import transition
from labs import live
from labs.builtin import load_lab
from labs.consumers import LabGridConsumer
from tests.test_labs import lab_definition

pytestmark = pytest.mark.django_db(transaction=True)  # the consumer's access check runs on a database thread


@pytest.fixture
def lab(course, sleep_template, cluster, settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    return load_lab(course, lab_definition())


def _socket(user, lab) -> ApplicationCommunicator:
    scope = {"type": "websocket", "path": "/ws/", "headers": [], "query_string": b"", "subprotocols": []}
    route = {"kwargs": {"slug": lab.course.slug, "lab_slug": lab.slug}}
    return ApplicationCommunicator(LabGridConsumer.as_asgi(), {**scope, "user": user, "url_route": route})


async def _open(user, lab) -> tuple[ApplicationCommunicator, dict]:
    socket = _socket(user, lab)
    await socket.send_input({"type": "websocket.connect"})
    return socket, await socket.receive_output(timeout=30)


def test_the_instructor_s_grid_gets_a_student_s_row_when_their_run_moves(
    lab, instructor, alice, make_job, monkeypatch, caplog
):
    from workers.labs import send_rows  # the worker's task, run here by hand with what the move queued

    job = make_job(alice, message="lab-word-42")
    queued = []
    monkeypatch.setattr("core.enqueue.send", lambda name, args: queued.append((name, args)))

    async def scenario():
        socket, answer = await _open(instructor, lab)
        assert answer["type"] == "websocket.accept"
        await database_sync_to_async(transition)(job, JobState.SUBMITTING)
        assert queued == [(live.SEND_ROWS, ([lab.pk], alice.pk))]  # sent by name once the move committed
        await database_sync_to_async(send_rows)(*queued[0][1])
        try:
            row = json.loads((await socket.receive_output(timeout=30))["text"])
        except TimeoutError:
            pytest.fail(f"no row reached the grid's socket; the worker logged: {caplog.text or 'nothing'}")
        await socket.send_input({"type": "websocket.disconnect", "code": 1000})
        await socket.wait(timeout=5)
        await database_sync_to_async(connections.close_all)()  # the worker thread's, before the test db goes
        return row

    row = asyncio.run(scenario())
    assert row["type"] == "row" and row["student"] == alice.pk and row["done"] == 0
    first = row["cells"][0]
    assert first["state"] == "running" and first["job"] == f"/jobs/{job.pk}/"


@pytest.mark.parametrize("who", ["alice", "other_instructor"])
def test_a_student_or_another_course_s_teacher_cannot_open_the_grid_socket(lab, who, request):
    user = request.getfixturevalue(who)

    async def scenario():
        _, answer = await _open(user, lab)
        await database_sync_to_async(connections.close_all)()
        return answer

    answer = asyncio.run(scenario())
    assert answer == {"type": "websocket.close", "code": 4404}
