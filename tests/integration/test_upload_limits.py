"""Upload limits enforced by the server on what arrives (real SFTP through sshd, real Redis): the files one person
starts within the window are counted whatever count the client declares, and a chunk's body is bounded by
FILES_CHUNK_BYTES (413), apart from MAX_REQUEST_BODY_BYTES, which bounds the bodies read whole."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core import measurements
from sessions.upload_limits import KEY

from .test_files import lab  # noqa: F401  (the lab directory fixture)


@pytest.fixture
def fresh_counts(alice, bob):
    for user in (alice, bob):
        measurements.client().delete(KEY.format(user=user.pk))
    yield
    for user in (alice, bob):
        measurements.client().delete(KEY.format(user=user.pk))


def put(client, base, name, data: bytes, *, size=None, offset=0, declared_count=1):
    size = len(data) if size is None else size
    query = f"?path=&name={name}&size={size}&offset={offset}&count={declared_count}"
    return client.put(base + "upload/" + query, data, content_type="application/octet-stream")


def test_files_started_in_the_window_are_counted_on_the_server_whatever_the_client_declares(
    lab,  # noqa: F811
    fresh_counts,
    cluster,
    alice,
    bob,
    api_for,
    settings,
):
    settings.GPULAB_FILES_MAX_UPLOAD_COUNT = 3
    client, base = api_for(alice), reverse("api:files-cluster", args=[cluster.pk])
    for n in range(3):
        assert put(client, base, f"f{n}.txt", b"data").status_code == 200
    half = put(client, base, "big.bin", b"x" * 10, size=20)  # the 4th file: one too many, though it says count=1
    assert half.status_code == 400 and "at most 3 files" in half.json()["detail"]
    assert sorted(e["name"] for e in client.get(base).json()["entries"]) == ["f0.txt", "f1.txt", "f2.txt"]
    assert put(client, base, "f1.txt", b"again").status_code == 200  # a file already counted may start over

    bob_client = api_for(bob)  # counted per person: bob's first file goes up
    assert put(bob_client, base, "mine.txt", b"bob").status_code == 200

    settings.GPULAB_FILES_UPLOAD_WINDOW_SECONDS = 0.001  # the window has passed: alice may upload again
    assert put(client, base, "later.txt", b"later").status_code == 200


def test_a_chunk_larger_than_the_chunk_limit_is_refused_with_413_and_nothing_is_written(
    lab,  # noqa: F811
    fresh_counts,
    cluster,
    alice,
    api_for,
    settings,
):
    settings.GPULAB_FILES_CHUNK_BYTES = 64 * 1024
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 16 * 1024  # bodies read whole; a chunk is streamed, not read whole
    client, base = api_for(alice), reverse("api:files-cluster", args=[cluster.pk])
    too_big = put(client, base, "data.bin", b"x" * (64 * 1024 + 1))
    assert too_big.status_code == 413 and "at most 64 KiB (65536 bytes)" in too_big.json()["detail"]
    assert client.get(base).json()["entries"] == [] and not any(lab.rglob("*.gpulab-upload"))

    data = bytes(range(256)) * 512  # 128 KiB in two chunks of the largest size, each over the whole-body bound
    first = put(client, base, "data.bin", data[: 64 * 1024], size=len(data))
    assert first.status_code == 200 and first.json()["received"] == 64 * 1024
    second = put(client, base, "data.bin", data[64 * 1024 :], size=len(data), offset=64 * 1024)
    assert second.json()["complete"] is True
    assert next(lab.rglob("data.bin")).read_bytes() == data
