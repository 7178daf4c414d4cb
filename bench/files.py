"""Files through the portal against direct SFTP to the same login node, as the same account, side by side.

    .venv/bin/python bench/files.py [--megabytes 500] [--chunk-megabytes 16] [--runs 2]

One random file of --megabytes is uploaded, then downloaded, each way --runs times (the best run counts):
- portal: uvicorn serving portal.asgi; upload as PUT chunks of --chunk-megabytes to /api/v1/files/…/upload/
  (what the page's upload does, with requests), download as one GET of /api/v1/files/…/download/ with curl, to a
  file (as a browser saves it);
- direct SFTP: OpenSSH's `sftp` client, what a student types, `put` and `get` to a file, as the same account;
- paramiko SFTP from this process, `put` and `getfo` into a hash (paramiko's pipelined transfer), for reference;
- the portal's own SFTP reader without HTTP (what small files and ranges use).
Every download's SHA-256 is checked against the file's after it is timed. Prints MB/s each way and the
portal/direct ratios (target for downloads: >= 0.7 of OpenSSH's sftp). Uses its own database (test_<name>) and
Redis database BENCH_REDIS_DB (default 2).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import make_lab, setup_database, start_web, stop

LAB_DIR = "~/gpulab-files-bench"


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


def portal_download(token: str, base: str, name: str, target: Path) -> None:
    """curl, as a browser would fetch it (a client in C), to a file."""
    url = f"{base}download/?path={name}"
    subprocess.run(["curl", "-sS", "--fail", "-o", str(target), "-H", f"Authorization: Token {token}", url], check=True)


def openssh_sftp(cluster, account, folder: Path, batch: str) -> None:
    """OpenSSH's sftp client running `batch`, with the account's key and the cluster's pinned host key."""
    from clusters.backends import ssh

    key, known = folder / "key", folder / "known_hosts"
    key.write_text(account.secret().strip() + "\n")
    key.chmod(0o600)
    known.write_text(f"{ssh.known_hosts_name(cluster.host, cluster.port)} {cluster.host_key.strip()}\n")
    argv = ["sftp", "-q", "-b", "-", "-F", "/dev/null", "-i", str(key), "-o", f"UserKnownHostsFile={known}"]
    argv += ["-o", "StrictHostKeyChecking=yes", "-P", str(cluster.port), f"{account.username}@{cluster.host}"]
    subprocess.run(argv, input=batch, text=True, check=True, stdout=subprocess.DEVNULL)


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
        with opened(home_space(cluster, student)):
            pass  # the student's folder, made on first use
        # Jobs and files go as the cluster's shared students' user (the isolated layout); the direct copies go to the
        # service account's own home, as a student's sftp goes to theirs, over the same sshd.
        direct = f"{LAB_DIR.removeprefix('~/')}-direct/bench.bin"
        with ssh.sftp(cluster, account) as sftp, contextlib.suppress(OSError):
            sftp.mkdir(direct.rpartition("/")[0], 0o700)

        web, port = start_web("files")

        size = args.megabytes * 10**6
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "bench.bin"
            with source.open("wb") as fh:
                for _ in range(size // (1 << 20)):
                    fh.write(os.urandom(1 << 20))
                fh.write(os.urandom(size % (1 << 20)))
            want = sha256_of(source)
            arrived = Path(tmp) / "arrived.bin"

            http = requests.Session()
            http.headers["Authorization"] = f"Token {token.key}"
            base = f"http://127.0.0.1:{port}/api/v1/files/clusters/{cluster.pk}/"
            figures = {
                f"{way} {what}": [] for way in ("portal", "direct", "paramiko") for what in ("upload", "download")
            }
            figures["reader download"] = []

            def timed(name, action, digest=lambda: sha256_of(arrived)):
                """Times `action`; then what it brought here (its digest) must be the file. Uploads pass None."""
                arrived.unlink(missing_ok=True)
                t0 = time.perf_counter()
                action()
                figures[name].append(time.perf_counter() - t0)
                if digest is not None:
                    assert digest() == want, f"{name}: what arrived differs from the file"

            for _ in range(args.runs):
                timed("portal upload", lambda: portal_upload(http, base, source, args.chunk_megabytes * 2**20), None)
                timed(
                    "direct upload",
                    lambda: openssh_sftp(cluster, account, Path(tmp), f"put {source} {direct}"),
                    None,
                )
                with ssh.sftp(cluster, account) as sftp:
                    timed("paramiko upload", lambda: sftp.put(str(source), direct), None)
                with ssh.sftp(cluster, account) as sftp, opened(home_space(cluster, student)) as files:
                    # the portal's copy and the direct ones arrived whole
                    assert files.resolve_file("bench.bin")[1].st_size == sftp.stat(direct).st_size == size

                timed("portal download", lambda: portal_download(token.key, base, "bench.bin", arrived))
                timed(
                    "direct download",
                    lambda: openssh_sftp(cluster, account, Path(tmp), f"get {direct} {arrived}"),
                )
                sink = Sink()
                with ssh.sftp(cluster, account) as sftp:
                    get = lambda sftp=sftp, sink=sink: sftp.getfo(direct, sink)  # noqa: E731
                    timed("paramiko download", get, sink.digest.hexdigest)
                reader = Sink()
                with opened(home_space(cluster, student)) as files:  # the portal's SFTP reader, without HTTP

                    def read_all(files=files, reader=reader):
                        real, _ = files.resolve_file("bench.bin")
                        for chunk in files.read_range(real, 0, size):
                            reader.write(chunk)

                    timed("reader download", read_all, reader.digest.hexdigest)

        rate = {name: size / min(times) / 1e6 for name, times in figures.items()}
        print(f"\n{args.megabytes} MB file, best of {args.runs}, login node 127.0.0.1 (sshd), portal on uvicorn")
        print(f"{'':9} {'portal':>11} {'OpenSSH sftp':>12} {'ratio':>6} {'paramiko':>11} {'ratio':>6}")
        for way in ("download", "upload"):
            portal, direct, paramiko = (rate[f"{who} {way}"] for who in ("portal", "direct", "paramiko"))
            print(
                f"{way:9} {portal:>6.1f} MB/s {direct:>7.1f} MB/s {portal / direct:>6.2f} {paramiko:>6.1f} MB/s "
                f"{portal / paramiko:>6.2f}"
            )
        print(f"the portal's SFTP reader alone, no HTTP (small files and ranges): {rate['reader download']:.1f} MB/s")
        print("target: download ratio >= 0.70 of OpenSSH's sftp")
    finally:
        if web is not None:
            stop(web)
        with contextlib.suppress(Exception), ssh.sftp(cluster, account) as sftp:  # the copies go, even after a failure
            sftp.remove(direct)
        with contextlib.suppress(Exception), opened(home_space(cluster, student)) as files:
            files.delete("bench.bin")
        teardown()


if __name__ == "__main__":
    main()
