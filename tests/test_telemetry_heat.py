"""The class dashboard's heat: the newest sample of each 5-second column over five minutes, which a course socket opens
with instead of the frames behind it; kept by the publisher and carried on by a publisher that starts again."""

from __future__ import annotations

import asyncio
import json

from telemetry import stream
from telemetry.heat import BUCKET_MS, COLUMNS, KEPT_SECONDS, CourseHeat
from telemetry.wire import CourseFrame, CourseRow

T0 = 1_800_000_000_000  # a column's start (ms)


def row(key: str, util: float | None, idle_s: int = 0, simulated: bool = False) -> CourseRow:
    student, job8, node, index = key.split("/")
    return CourseRow(student, job8, f"{node}/{index}", util, 10.0, util is None, idle_s, simulated)


def frame(seq: int, t: int, *rows: CourseRow, with_roster: bool = True) -> dict:
    """A course frame as the publisher sends it: the builder's record (telemetry/wire.py), numbered."""
    return {"type": "frame", "seq": seq, "t": t, **CourseFrame(list(rows), t).to_wire(with_roster=with_roster)}


def test_each_column_holds_its_newest_sample_and_columns_without_one_are_null():
    heat = CourseHeat()
    for second in range(12):  # columns T0, T0+5 s and T0+10 s
        heat.add(frame(second + 1, T0 + second * 1000 + 200, row("ada/a1/gpu1/0", float(second))))
    heat.add(frame(13, T0 + 12_500, row("ada/a1/gpu1/0", None, idle_s=30), with_roster=False))
    message = heat.message()
    assert (message["seq"], message["t"], message["bucket_ms"]) == (13, T0 + 12_500, BUCKET_MS)
    assert message["first"] == T0 + 10_000 - (COLUMNS - 1) * BUCKET_MS
    [gpu] = message["gpus"]
    assert len(gpu["util"]) == COLUMNS and gpu["util"][:-3] == [None] * (COLUMNS - 3)
    assert gpu["util"][-3:] == [4.0, 9.0, None]  # a stale node's null is its column's newest sample
    assert (gpu["seen"], gpu["idle_s"], gpu["job"], gpu["student"]) == (T0 + 12_500, 30, "a1", "ada")


def test_a_gpu_whose_job_ended_five_minutes_ago_leaves_and_old_columns_are_dropped():
    heat = CourseHeat()
    heat.add(frame(1, T0, row("ada/a1/gpu1/0", 50.0), row("bob/b1/gpu1/1", 70.0)))
    later = T0 + (COLUMNS - 1) * BUCKET_MS  # ada's column is still the oldest shown
    heat.add(frame(2, later, row("bob/b1/gpu1/1", 20.0)))
    assert [g["key"] for g in heat.message()["gpus"]] == ["ada/a1/gpu1/0", "bob/b1/gpu1/1"]
    assert heat.message()["gpus"][0]["util"][0] == 50.0
    heat.add(frame(3, later + BUCKET_MS, row("bob/b1/gpu1/1", 30.0)))
    [bob] = heat.message()["gpus"]
    assert bob["key"] == "bob/b1/gpu1/1" and bob["util"][-2:] == [20.0, 30.0] and bob["util"][0] is None
    assert heat.tracks["bob/b1/gpu1/1"].cells.keys() == {later, later + BUCKET_MS}


def test_a_class_of_a_thousand_gpus_opens_with_kilobytes_where_its_frames_were_megabytes():
    heat = CourseHeat()
    keys = [f"student{i // 4:03d}/{i // 4:08x}/gpu{i // 8:03d}/{i % 8}" for i in range(1000)]
    rows_bytes = 0
    for second in range(300):
        rows = [row(key, float((second * 7 + i) % 100)) for i, key in enumerate(keys)]
        published = frame(second + 1, T0 + second * 1000, *rows, with_roster=second == 0)
        rows_bytes += len(json.dumps(frame(second + 1, T0 + second * 1000, *rows), separators=(",", ":")))
        heat.add(published)
    size = len(heat.text())
    assert rows_bytes > 25_000_000 and size < 500_000, (rows_bytes, size)
    assert heat.message()["live"] == sorted(keys)


def test_a_frame_of_a_roster_never_seen_is_left_out_and_a_new_roster_is_followed():
    heat = CourseHeat()
    ada, bob = row("ada/a1/gpu1/0", 10.0), row("bob/b1/gpu1/1", 20.0)
    heat.add(frame(1, T0, ada))
    heat.add(frame(2, T0 + 1000, ada, bob, with_roster=False))  # the frame that named this roster was lost
    assert heat.seq == 1 and "bob/b1/gpu1/1" not in heat.tracks
    heat.add(frame(3, T0 + 2000, ada, bob))
    heat.add(frame(4, T0 + 3000, row("ada/a1/gpu1/0", 11.0), row("bob/b1/gpu1/1", 21.0), with_roster=False))
    message = heat.message()
    assert message["seq"] == 4 and message["live"] == ["ada/a1/gpu1/0", "bob/b1/gpu1/1"]
    assert [g["util"][-1] for g in message["gpus"]] == [11.0, 21.0]


def test_a_publisher_that_starts_again_goes_on_from_the_heat_it_stored():
    heat = CourseHeat()
    heat.add(frame(7, T0, row("ada/a1/gpu1/0", 42.0, simulated=True)))
    again = CourseHeat.from_text(heat.text())
    assert again.message() == heat.message() and again.message()["gpus"][0]["simulated"] is True
    again.add(frame(8, T0 + 1000, row("ada/a1/gpu1/0", 44.0, simulated=True), with_roster=False))
    assert again.message()["gpus"][0]["util"][-1] == 44.0 and again.message()["seq"] == 8
    for broken in (None, "", "not json", '{"first": 1}', b'{"gpus": [{}]}', "[]"):
        assert CourseHeat.from_text(broken).message() == {"type": "heat", "gpus": []}


class FakeRedis:
    """The calls the publisher makes, as a dict of strings and sorted sets."""

    def __init__(self, stored: dict | None = None):
        self.values: dict[str, object] = dict(stored or {})
        self.expiry: dict[str, int | None] = {}

    def pipeline(self, transaction=False):
        return FakePipeline(self)

    async def mget(self, keys):
        return [self.values.get(key) for key in keys]

    async def get(self, key):
        return self.values.get(key)


class FakePipeline:
    def __init__(self, redis: FakeRedis):
        self.redis, self.calls = redis, []

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False

    def __getattr__(self, name):
        return lambda *args, **kw: self.calls.append((name, args, kw))

    async def execute(self):
        answers = []
        for name, args, kw in self.calls:
            values = self.redis.values
            if name == "set":
                if not (kw.get("nx") and args[0] in values):
                    values[args[0]] = args[1]
                    self.redis.expiry[args[0]] = kw.get("ex")
            elif name == "incr":
                values[args[0]] = int(values.get(args[0], 0)) + 1
            elif name == "zadd":
                values.setdefault(args[0], {}).update(args[1])  # type: ignore[union-attr]
            answers.append(values.get(args[0]))
        return answers


class FakeLayer:
    def __init__(self):
        self.sent: list[tuple[str, dict]] = []

    async def group_send(self, group, message):
        self.sent.append((group, message))


def test_a_course_group_keeps_its_heat_instead_of_a_ring_and_job_groups_keep_their_ring():
    course, job = stream.course_group(3), stream.job_group("j1")
    redis, layer = FakeRedis(), FakeLayer()
    publisher = stream.Publisher(redis=redis, layer=layer)
    course_body = CourseFrame([row("ada/a1/gpu1/0", 61.0)], T0).to_wire()

    async def publish():
        await publisher.publish({course: course_body, job: {"kind": "job", "gpus": []}}, now_ms=T0)
        return await stream.heat(redis, course)

    text = asyncio.run(publish())
    keys = set(redis.values)
    assert f"{stream.KEY_PREFIX}:ring:{job}" in keys and f"{stream.KEY_PREFIX}:ring:{course}" not in keys
    heat = json.loads(text)
    assert heat["type"] == "heat" and heat["gpus"][0]["util"][-1] == 61.0
    assert heat["seq"] == json.loads(next(m["text"] for g, m in layer.sent if g == course))["seq"]
    assert asyncio.run(stream.heat(FakeRedis(), course)) == stream.EMPTY_HEAT
    # A class whose jobs all ended sends no frames: its heat leaves Redis when its last column leaves the page.
    assert redis.expiry[f"{stream.KEY_PREFIX}:heat:{course}"] == KEPT_SECONDS == 300


def test_a_new_publisher_carries_on_the_heat_redis_holds():
    course = stream.course_group(3)
    before = CourseHeat()
    before.add(frame(5, T0 - 1000, row("ada/a1/gpu1/0", 12.0)))
    redis = FakeRedis({f"{stream.KEY_PREFIX}:heat:{course}": before.text().encode()})
    publisher = stream.Publisher(redis=redis, layer=FakeLayer())
    body = CourseFrame([row("ada/a1/gpu1/0", 14.0), row("bob/b1/gpu1/1", 80.0)], T0).to_wire()
    heat = json.loads(asyncio.run(_publish_then_read(publisher, redis, course, body)))
    assert [g["key"] for g in heat["gpus"]] == ["ada/a1/gpu1/0", "bob/b1/gpu1/1"]
    assert heat["gpus"][0]["util"][-2:] == [12.0, 14.0]  # ada's column before the restart, and after


async def _publish_then_read(publisher, redis, group, body) -> str:
    await publisher.publish({group: body}, now_ms=T0)
    return await stream.heat(redis, group)
