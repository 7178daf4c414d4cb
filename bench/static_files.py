"""Static files through the portal's ASGI application as it is served: time to first byte and the server's memory
for one large static file, fetched once and then by many clients at once.

    .venv/bin/python bench/static_files.py [--megabytes 64] [--concurrent 16]

uvicorn serves portal.asgi:application (one process, as deploy/ runs it per container) with the test settings
(DEBUG off) plus one more static folder, in a temporary directory, holding one file of random bytes, bench/big.mp4
(a type no compressed variant is made of), found the way the tests' static files are (the finders). The client is
aiohttp in this process, reading each body in 1 MB chunks and counting its bytes. Printed: time to first byte (one
request; then p50 and max of the concurrent ones), the wall time of the concurrent fetch and its throughput, and the
uvicorn process's resident memory at rest and its peak (VmHWM) after each step; then the figures recorded below.
Run it after `make test` or `make demo` started the services (it reads their env files).

Recorded on the development machine (2 shared cores, loopback), 64 MB file, 16 concurrent requests:

    before, WhiteNoise 6.11's middleware: Django reads its sync iterator whole, in one thread, before the first byte
      one request: TTFB 232 ms; 16 at once: TTFB p50 3,317 ms, max 3,451 ms, all in 6.2 s (174 MB/s);
      peak RSS +1,027 MiB over rest (16 copies of the file)
    ServeStatic's own middleware: an async iterator of 8 KiB reads, each a hop to a thread and an ASGI message
      one request: 18.7 s for the file; 16 at once: 121 s (9 MB/s); peak RSS +1 MiB
    ServeStatic's middleware streaming 1 MiB reads (reverted: async-only, it broke the test client beside Playwright)
      one request: TTFB 13 ms; 16 at once: TTFB p50 299 ms, max 457 ms, all in 3.7 s (291 MB/s);
      peak RSS +34 MiB over rest
    after, as shipped: WhiteNoise's middleware, its FileResponse sent by portal.static_files' ASGI handler in 1 MiB
    blocks (2026-11-28, the machine otherwise idle)
      one request: TTFB 9 ms, the file in 0.08 s; 16 at once: TTFB p50 59 ms, max 67 ms, all in 1.17 s (918 MB/s);
      peak RSS +51 MiB over rest
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import load_env, start, stop, wait_for

PATH = "/static/bench/big.mp4"
RECORDED = __doc__.split("16 concurrent requests:\n\n", 1)[1]


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS (resident now) and VmHWM (its peak since the process started) of one process, in KiB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


async def fetch(session, url: str, size: int) -> tuple[float, float]:
    """(seconds to the first body byte, seconds to the last) of one GET, its length checked."""
    began = time.perf_counter()
    first = None
    received = 0
    async with session.get(url) as response:
        response.raise_for_status()
        async for chunk in response.content.iter_chunked(1 << 20):
            if first is None:
                first = time.perf_counter() - began
            received += len(chunk)
    if received != size:
        raise SystemExit(f"{url}: received {received} bytes of {size}")
    return first or 0.0, time.perf_counter() - began


async def measure(base: str, size: int, concurrent: int, pid: int) -> None:
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.get(base + "/static/img/favicon.svg") as warm:  # the app loaded, its file list read
            warm.raise_for_status()
        rest = memory_kib(pid)["VmRSS"]
        print(f"uvicorn at rest: {rest / 1024:.0f} MiB resident")
        ttfb, total = await fetch(session, base + PATH, size)
        peak_one = memory_kib(pid)["VmHWM"]
        print(
            f"one request:   TTFB {ttfb * 1000:.0f} ms, whole file {total:.2f} s; "
            f"peak RSS {peak_one / 1024:.0f} MiB (+{(peak_one - rest) / 1024:.0f} MiB over rest)"
        )
        began = time.perf_counter()
        results = await asyncio.gather(*(fetch(session, base + PATH, size) for _ in range(concurrent)))
        wall = time.perf_counter() - began
        firsts = sorted(first for first, _ in results)
        peak_many = memory_kib(pid)["VmHWM"]
        print(
            f"{concurrent} at once:  TTFB p50 {statistics.median(firsts) * 1000:.0f} ms, max {firsts[-1] * 1000:.0f} "
            f"ms; all done in {wall:.2f} s ({concurrent * size / wall / 1e6:.0f} MB/s); "
            f"peak RSS {peak_many / 1024:.0f} MiB (+{(peak_many - rest) / 1024:.0f} MiB over rest)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=64)
    parser.add_argument("--concurrent", type=int, default=16)
    args = parser.parse_args()
    load_env()
    size = args.megabytes * 1024 * 1024
    with tempfile.TemporaryDirectory(prefix="bench-static-") as data_dir:
        big = Path(data_dir) / "files" / "bench" / "big.mp4"
        big.parent.mkdir(parents=True)
        (Path(data_dir) / "bench_static_settings.py").write_text(
            "from tests.settings import *  # noqa: F403\n"
            f"STATICFILES_DIRS = [*STATICFILES_DIRS, {str(big.parent.parent)!r}]  # noqa: F405\n"
        )
        with big.open("wb") as out:
            for _ in range(args.megabytes):
                out.write(os.urandom(1024 * 1024))
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        log = Path(data_dir) / "web.log"
        uvicorn = str(Path(sys.executable).parent / "uvicorn")
        argv = [uvicorn, "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
        python_path = os.pathsep.join([data_dir, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        web = start(
            argv, log, DATA_DIR=data_dir, DJANGO_SETTINGS_MODULE="bench_static_settings", PYTHONPATH=python_path
        )
        try:
            wait_for(lambda: "Uvicorn running on" in log.read_text(), 60, "uvicorn to start")
            print(f"{args.megabytes} MB static file, {args.concurrent} concurrent requests, uvicorn pid {web.pid}")
            asyncio.run(measure(f"http://127.0.0.1:{port}", size, args.concurrent, web.pid))
            print("\nRecorded on the development machine, 64 MB, 16 at once:\n" + RECORDED)
        finally:
            stop(web)
            warnings = [line for line in log.read_text().splitlines() if "synchronous iterators" in line]
            if warnings:
                print(f"Django warned {len(warnings)} time(s): {warnings[0].strip()[:160]}")


if __name__ == "__main__":
    main()
