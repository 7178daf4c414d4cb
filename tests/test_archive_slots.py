"""Folder archives per user, across web processes (sessions/archive_slots.py), on the Redis `make test` starts; the
view's refusal and the slot's return on every way a download ends (streamed to the end, closed unstarted, HEAD)."""

from __future__ import annotations

import os
import time

import pytest

from sessions import archive_slots

pytestmark = pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs the Redis that `make test` starts")

USER = 987_654  # no real user: the slots are keyed by id only


@pytest.fixture(autouse=True)
def _no_slots_held():
    archive_slots._redis().delete(archive_slots.KEY.format(user=USER))
    yield
    archive_slots._redis().delete(archive_slots.KEY.format(user=USER))


def test_a_user_holds_as_many_archives_as_allowed_and_gets_one_back_when_one_ends(settings):
    settings.GPULAB_FILES_ARCHIVES_PER_USER = 2
    first, second = archive_slots.take(USER), archive_slots.take(USER)
    assert first and second and archive_slots.take(USER) is None
    assert archive_slots.take(USER + 1)  # another user's count is their own
    first.give_back()
    first.give_back()  # twice changes nothing
    assert archive_slots.take(USER) and archive_slots.take(USER) is None


def test_a_stream_gives_its_slot_back_when_it_runs_out_and_when_closed_before_it_started(settings):
    settings.GPULAB_FILES_ARCHIVES_PER_USER = 1
    slot = archive_slots.take(USER)
    assert list(slot.holding(iter([b"a", b"b"]))) == [b"a", b"b"]
    slot = archive_slots.take(USER)
    assert slot is not None

    def never_started():
        yield b"x"

    slot.holding(never_started()).close()  # an abandoned download whose reader was never asked for a chunk
    assert archive_slots.take(USER) is not None


def test_a_slot_of_a_process_that_died_is_reclaimed_after_its_age(settings):
    settings.GPULAB_FILES_ARCHIVES_PER_USER = 1
    key = archive_slots.KEY.format(user=USER)
    archive_slots._redis().zadd(key, {"left-by-a-dead-process": time.time() - archive_slots.SLOT_SECONDS - 1})
    assert archive_slots.take(USER) is not None


def test_the_refusal_says_what_to_do(settings):
    settings.GPULAB_FILES_ARCHIVES_PER_USER = 2
    assert archive_slots.refusal() == (
        "You already have 2 folder downloads under way; wait for one to finish, then try again."
    )
    settings.GPULAB_FILES_ARCHIVES_PER_USER = 1
    assert archive_slots.refusal().startswith("You already have one folder download under way")


@pytest.fixture
def run_dir(tmp_path, monkeypatch, running_job):
    """Alice's run directory: a real folder on this machine, reached through tests/local_sftp.py's SFTP stand-in."""
    from sessions import api
    from tests.local_sftp import opened_locally

    root = tmp_path / "gpulab-test" / "jobs" / str(running_job.pk)
    (root / "out").mkdir(parents=True)
    (root / "out" / "loss.csv").write_text("step,loss\n1,2.5\n")
    monkeypatch.setattr(api, "opened", opened_locally(tmp_path))
    monkeypatch.setattr("sessions.files.opened", opened_locally(tmp_path))
    return root


def test_one_archive_too_many_is_refused_in_words_before_the_cluster_is_asked(
    run_dir, running_job, alice, api_for, settings
):
    settings.GPULAB_FILES_ARCHIVES_PER_USER = 1
    archive_slots._redis().delete(archive_slots.KEY.format(user=alice.pk))
    url = f"/api/v1/files/jobs/{running_job.pk}/download/"
    client = api_for(alice)
    held = archive_slots.take(alice.pk)  # another tab's download, streaming
    refused = client.get(url, {"path": "out", "archive": "zip"})
    assert refused.status_code == 429 and refused["Retry-After"] == "10"
    assert refused.json()["detail"].startswith("You already have one folder download under way")
    assert client.get(url, {"path": "out/loss.csv"}).status_code == 200  # a single file needs no slot
    held.give_back()
    assert client.head(url, {"path": "out", "archive": "zip"}).status_code == 200  # headers only: slot given back
    streamed = client.get(url, {"path": "out", "archive": "tar"})
    assert streamed.status_code == 200 and b"step,loss" in b"".join(streamed)
    assert client.get(url, {"path": "out", "archive": "zip"}).status_code == 200  # the streamed one gave it back
    archive_slots._redis().delete(archive_slots.KEY.format(user=alice.pk))


def test_a_streaming_archive_renews_its_slot_so_only_a_dead_ones_ages_out(settings, monkeypatch):
    settings.GPULAB_FILES_ARCHIVES_PER_USER = 1
    key = archive_slots.KEY.format(user=USER)
    slot = archive_slots.take(USER)
    old = time.time() - archive_slots.SLOT_SECONDS + 5
    archive_slots._redis().zadd(key, {slot.token: old})  # taken nearly SLOT_SECONDS ago
    monkeypatch.setattr(archive_slots, "RENEW_SECONDS", 0)
    chunks = slot.holding(iter([b"a", b"b"]))
    next(chunks)  # a chunk sent: the slot is renewed
    assert archive_slots._redis().zscore(key, slot.token) > old + 4
