"""The class dashboard's last hour (telemetry/class_hour.py): each student's GPU utilization minute by minute from
the stored series, the jobs that ended in the hour included and older ones not; the page's table and hour.json say
the same; only the course's teachers get them; two queries whatever the class's size."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.models import Job
from telemetry.class_hour import MINUTE_MS, MINUTES, class_hour
from telemetry.models import JobSummary, SeriesChunk

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 28, 10, 30, 20, tzinfo=UTC)
START_MS = int(datetime(2026, 11, 28, 9, 31, tzinfo=UTC).timestamp() * 1000)  # the oldest column: 09:31


def job(owner, course, cluster, template, state, *, ended_minutes_ago=None) -> Job:
    finished = NOW - timedelta(minutes=ended_minutes_ago) if ended_minutes_ago is not None else None
    return Job.objects.create(owner=owner, course=course, cluster=cluster, template=template, state=state, gpus=2,
                              started_at=NOW - timedelta(hours=3), finished_at=finished)  # fmt: skip


def stored(job: Job, minute: int, utils: list[list[float]]) -> None:
    """One chunk from column `minute` on: per GPU, six ten-second means a minute (as the recorder flushes them)."""
    start = START_MS + minute * MINUTE_MS
    series = {"gpu-util": {}, "cpu": {"host": {"name": "CPU", "x": [start], "y": [99.0]}}}
    for index, per_minute in enumerate(utils):
        x = [start + m * MINUTE_MS + s * 10_000 + 5_000 for m in range(len(per_minute)) for s in range(6)]
        y = [value for value in per_minute for _ in range(6)]
        series["gpu-util"][f"node1:{index}"] = {"name": f"GPU {index}", "x": x, "y": y, "lo": y, "hi": y}
    begins = datetime.fromtimestamp(start / 1000, tz=UTC)
    SeriesChunk.objects.create(job=job, start=begins, end=begins + timedelta(minutes=len(utils[0])), series=series)


@pytest.fixture
def hour(course, other_course, cluster, sleep_template, alice, bob, make_user):
    """alice runs a 2-GPU job now (busy); bob's job ended 40 minutes ago (its two minutes nearly idle); carl's ended
    two hours ago; dora's job is another course's."""
    now_running = job(alice, course, cluster, sleep_template, "running")
    stored(now_running, 55, [[80, 90, 70], [60, 70, 50]])
    ended = job(bob, course, cluster, sleep_template, "completed", ended_minutes_ago=40)
    stored(ended, 10, [[10, 0], [10, 0]])
    JobSummary.objects.create(job=ended, simulated_gpus=True, samples=24)
    long_ago = job(make_user("carl"), course, cluster, sleep_template, "completed", ended_minutes_ago=120)
    stored(long_ago, 0, [[100]])  # its chunk is in the window's first minute, but the job ended before the hour
    elsewhere = job(make_user("dora"), other_course, cluster, sleep_template, "running")
    stored(elsewhere, 5, [[100]])
    return course


def test_each_student_has_a_cell_per_minute_with_their_gpus_mean_and_ended_jobs_stay(hour):
    shown = class_hour(hour, now=NOW)
    assert (shown["start"], shown["minutes"]) == (START_MS, MINUTES)
    bob, alice = shown["rows"]  # the least busy first
    assert (bob["student"], bob["jobs"], bob["running"], bob["mean"]) == ("bob", 1, False, 5.0)
    assert bob["util"][10:12] == [10, 0] and bob["util"][:10] == [None] * 10 and bob["util"][12:] == [None] * 48
    assert (alice["student"], alice["running"]) == ("alice", True)
    assert alice["util"][55:58] == [70, 80, 60] and alice["util"][58:] == [None, None]  # the two GPUs' mean
    assert alice["mean"] == pytest.approx(70.0)
    assert shown["simulated"] is True  # bob's job ran on the demo's stand-in GPUs


def test_a_class_without_gpu_use_in_the_hour_has_no_rows(course):
    assert class_hour(course, now=NOW) == {"start": START_MS, "minutes": 60, "rows": [], "simulated": False}


def test_two_queries_whatever_the_number_of_jobs_and_chunks(hour, course, cluster, sleep_template, make_user):
    with CaptureQueriesContext(connection) as few:
        class_hour(course, now=NOW)
    for n in range(8):
        more = job(make_user(f"s{n}"), course, cluster, sleep_template, "running")
        for minute in range(0, 60, 10):
            stored(more, minute, [[30, 40], [50, 60]])
    with CaptureQueriesContext(connection) as many:
        rows = class_hour(course, now=NOW)["rows"]
    assert len(few) == len(many) == 2 and len(rows) == 10


def test_the_dashboard_shows_the_hour_as_a_table_and_hour_json_redraws_it(login, instructor, hour, monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    page = login(instructor).get(f"/courses/{hour.slug}/dashboard/").content.decode()
    assert 'id="class-hour-table"' in page and 'id="class-hour"' in page and "data-hour-grid" in page
    table = page[page.index('id="class-hour-table"') :]
    assert table.index(">bob<") < table.index(">alice<")  # least busy first
    assert "carl" not in table and "dora" not in table
    assert "ended" in table[table.index(">bob<") : table.index(">alice<")]
    answer = login(instructor).get(f"/courses/{hour.slug}/dashboard/hour.json")
    assert answer.status_code == 200 and answer["Cache-Control"] == "no-store"
    assert [row["student"] for row in answer.json()["rows"]] == ["bob", "alice"]


def test_a_ta_reads_the_hour_and_students_and_strangers_do_not(client, login, ta, alice, hour):
    url = f"/courses/{hour.slug}/dashboard/hour.json"
    assert login(ta).get(url).status_code == 200
    assert login(alice).get(url).status_code == 404  # a student of the course: another student's figures
    client.logout()
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    assert login(alice).get("/courses/no-such-course/dashboard/hour.json").status_code == 404
