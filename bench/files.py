"""Files through the portal against direct SFTP to the same login node, as the same account, side by side.

    .venv/bin/python bench/files.py [--megabytes 500] [--chunk-megabytes 16] [--runs 2]

One random file of --megabytes is uploaded, then downloaded, each way --runs times (the best run counts):
- portal: uvicorn serving portal.asgi; upload as PUT chunks of --chunk-megabytes to /api/v1/files/…/upload/
  (what the page's upload does, with requests), download as one GET of /api/v1/files/…/download/ (curl, hashed
  by sha256sum on the way);
- direct: paramiko SFTP from this process to sshd, `put` and `get` (paramiko's pipelined transfer).
Both sides check the SHA-256 of what arrived. Prints MB/s each way and the portal/direct ratio (target for
downloads: >= 0.7). Uses its own database (test_<name>) and Redis database BENCH_REDIS_DB (default 2).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, make_lab, setup_database, start, stop, wait_for

LAB_DIR = "~/gpulab-files-bench"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def portal_upload(session, base: str, source: Path, chunk: int) -> None:
    size, offset = source.stat().st_size, 0
    with source.open("rb") as fh:
        while offset < size:
            fh.seek(offset)
            answer = session.put(
                f"{base}upload/",
                params={"path": "", "name": source.name, "size": size, "offset": offset},
                data=fh.read(chunk),
                headers={"Content-Type": "application/octet-stream"},
            )
            answer.raise_for_status()
            offset = answer.json()["received"]


def portal_download(token: str, base: str, name: str) -> tuple[int, str]:
    """curl, as a browser would fetch it (a client in C), its bytes hashed on the way (sha256sum)."""
    curl = subprocess.Popen(
        ["curl", "-sS", "--fail", "-H", f"Authorization: Token {token}", f"{base}download/?path={name}"],
        stdout=subprocess.PIPE,
    )
    digest = subprocess.run(["sha256sum"], stdin=curl.stdout, capture_output=True, text=True, check=True)
    if curl.wait() != 0:
        raise SystemExit("curl could not download the file through the portal")
    return digest.stdout.split()[0]


class Sink:
    def __init__(self):
        self.digest, self.total = hashlib.sha256(), 0

    def write(self, data):
        self.digest.update(data)
        self.total += len(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=int, default=500)
    parser.add_argument("--chunk-megabytes", type=int, default=16)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()

    teardown = setup_database()
    web = None
    try:
        import requests
        from rest_framework.authtoken.models import Token

        from clusters.backends import ssh
        from sessions.files import home_space, opened

        _, student, cluster, _ = make_lab()
        cluster.lab_dir = LAB_DIR
        cluster.save()
        token = Token.objects.create(user=student)
        account = cluster.service_account()
        with opened(home_space(cluster, student)) as files:
            root = files.root  # the student's folder, made on first use
        direct_dir = root + "-direct"

        port = free_port()
        log = Path(tempfile.gettempdir()) / "bench-files-web.log"
        argv = [str(ROOT / ".venv/bin/uvicorn"), "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
        web = start(argv, log)
        wait_for(lambda: "Uvicorn running on" in log.read_text(), 60, "uvicorn to start")

        size = args.megabytes * 10**6
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "bench.bin"
            with source.open("wb") as fh:
                for _ in range(size // (1 << 20)):
                    fh.write(os.urandom(1 << 20))
                fh.write(os.urandom(size % (1 << 20)))
            want = sha256_of(source)

            http = requests.Session()
            http.headers["Authorization"] = f"Token {token.key}"
            base = f"http://127.0.0.1:{port}/api/v1/files/clusters/{cluster.pk}/"
            ways = ("portal upload", "direct upload", "portal download", "direct download", "reader download")
            figures = {name: [] for name in ways}
            for _ in range(args.runs):
                t0 = time.perf_counter()
                portal_upload(http, base, source, args.chunk_megabytes * 2**20)
                figures["portal upload"].append(time.perf_counter() - t0)

                with ssh.sftp(cluster, account) as sftp:
                    ssh.makedirs(sftp, direct_dir)
                    t0 = time.perf_counter()
                    sftp.put(str(source), f"{direct_dir}/bench.bin")
                    figures["direct upload"].append(time.perf_counter() - t0)

                t0 = time.perf_counter()
                got = portal_download(token.key, base, "bench.bin")
                figures["portal download"].append(time.perf_counter() - t0)
                assert got == want, "the portal's download differs from the file"

                with opened(home_space(cluster, student)) as files:  # the portal's reader, without HTTP
                    sink = Sink()
                    t0 = time.perf_counter()
                    real, _ = files.resolve_file("bench.bin")
                    for chunk in files.read_range(real, 0, size):
                        sink.write(chunk)
                    figures["reader download"].append(time.perf_counter() - t0)
                    assert sink.digest.hexdigest() == want

                with ssh.sftp(cluster, account) as sftp:
                    sink = Sink()
                    t0 = time.perf_counter()
                    sftp.getfo(f"{direct_dir}/bench.bin", sink)
                    figures["direct download"].append(time.perf_counter() - t0)
                    assert sink.total == size and sink.digest.hexdigest() == want, "direct SFTP read differs"

            with ssh.sftp(cluster, account) as sftp:  # the portal's copy arrived whole
                attrs = sftp.stat(f"{root}/bench.bin")
                assert attrs.st_size == size

        rate = {name: size / min(times) / 1e6 for name, times in figures.items()}
        print(f"\n{args.megabytes} MB file, best of {args.runs}, login node 127.0.0.1 (sshd), portal on uvicorn")
        print(f"{'':10} {'portal':>12} {'direct SFTP':>12} {'ratio':>7}")
        for way in ("download", "upload"):
            portal, direct = rate[f"portal {way}"], rate[f"direct {way}"]
            print(f"{way:10} {portal:>8.1f} MB/s {direct:>7.1f} MB/s {portal / direct:>7.2f}")
        reader = rate["reader download"]
        ratio = reader / rate["direct download"]
        print(f"{'(reader)':10} {reader:>8.1f} MB/s {'':>12} {ratio:>7.2f}  the portal's SFTP reads alone, no HTTP")
        print("target: download ratio >= 0.70")
    finally:
        if web is not None:
            stop(web)
        with contextlib.suppress(Exception), ssh.sftp(cluster, account) as sftp:  # the copies go, even after a failure
            for path in (f"{root}/bench.bin", f"{direct_dir}/bench.bin"):
                with contextlib.suppress(OSError):
                    sftp.remove(path)
        teardown()


if __name__ == "__main__":
    main()
