"""Static files under ASGI (how uvicorn serves the portal): streamed from the file as the client reads, in 1 MiB
reads, never read whole into memory before the first byte (bench/static_files.py measures it); ranges, HEAD and
the headers as before."""

from __future__ import annotations

import asyncio
import hashlib
import os
import warnings

import pytest
from asgiref.testing import ApplicationCommunicator
from django.core.handlers.asgi import ASGIHandler

from portal.static_files import BLOCK

pytestmark = pytest.mark.django_db(transaction=True)

SIZE = 3 * BLOCK + 5


@pytest.fixture
def big_file(tmp_path, settings) -> bytes:
    """A 3 MiB file among the static files, found as the tests find the rest (the finders)."""
    folder = tmp_path / "files" / "bench"
    folder.mkdir(parents=True)
    data = os.urandom(SIZE)
    (folder / "big.mp4").write_bytes(data)
    settings.STATICFILES_DIRS = [*settings.STATICFILES_DIRS, str(folder.parent)]
    return data


def get(path: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[dict, list[bytes], list]:
    """One request through Django's ASGI handler built now (so its middleware sees the static files of the test):
    (the response start, the body messages, the warnings raised meanwhile)."""
    scope = {"type": "http", "method": method, "path": path, "query_string": b"", "scheme": "http", "root_path": ""}
    scope |= {"server": ("testserver", 80), "client": ("127.0.0.1", 5000), "http_version": "1.1"}
    scope["headers"] = [(b"host", b"testserver"), *((k.encode(), v.encode()) for k, v in (headers or {}).items())]

    async def run():
        communicator = ApplicationCommunicator(ASGIHandler(), scope)
        await communicator.send_input({"type": "http.request", "body": b""})
        start = await communicator.receive_output(timeout=20)
        bodies = []
        while True:
            message = await communicator.receive_output(timeout=20)
            bodies.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        await communicator.wait(timeout=5)
        return start, bodies

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start, bodies = asyncio.run(run())
    return start, bodies, [str(w.message) for w in caught]


def header(start: dict, name: str) -> str:
    return {key.decode().lower(): value.decode() for key, value in start["headers"]}.get(name, "")


def test_a_large_static_file_is_streamed_in_1_mib_messages_never_read_whole(big_file):
    start, bodies, caught = get("/static/bench/big.mp4")
    assert start["status"] == 200 and header(start, "content-length") == str(SIZE)
    assert not [w for w in caught if "synchronous iterators" in w]  # Django read no sync iterator whole
    sizes = [len(body) for body in bodies if body]  # each 1 MiB read sent in Django's 64 KiB messages, not 8 KiB ones
    assert sizes == [ASGIHandler.chunk_size] * (3 * BLOCK // ASGIHandler.chunk_size) + [5]
    assert hashlib.sha256(b"".join(bodies)).digest() == hashlib.sha256(big_file).digest()


def test_a_range_a_head_and_the_headers_are_served_as_before(big_file):
    start, bodies, _ = get("/static/bench/big.mp4", headers={"range": f"bytes={BLOCK - 2}-{BLOCK + 1}"})
    assert start["status"] == 206 and b"".join(bodies) == big_file[BLOCK - 2 : BLOCK + 2]
    assert header(start, "content-range") == f"bytes {BLOCK - 2}-{BLOCK + 1}/{SIZE}"
    head, bodies, _ = get("/static/bench/big.mp4", method="HEAD")
    assert head["status"] == 200 and b"".join(bodies) == b"" and header(head, "content-type") == "video/mp4"
    assert header(head, "access-control-allow-origin") == "*" and "max-age" in header(head, "cache-control")


def test_a_missing_static_file_is_the_portals_404():
    start, _, _ = get("/static/bench/no-such-file.mp4")
    assert start["status"] == 404
