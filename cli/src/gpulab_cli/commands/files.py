"""files ls|get|put: a job's run directory, with downloads and uploads that go on where an interrupted one stopped."""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, cast

import click
import requests
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from .. import context, exits, uploads
from ..client import JSONObject, Portal, Refused
from ..job_ids import complete_job, resolve, short
from ..output import emit_json, note, output_option, table

CHUNK = 8 * 2**20  # an upload's piece: under the portal's FILES_CHUNK_BYTES (16 MiB by default)
SMALLEST_CHUNK = 2**20  # a portal configured lower answers 413; pieces halve down to this
READ = 2**20
PART = ".part"  # a download in progress, kept to be resumed


@click.group(
    epilog="""\b
Examples:
  gpulab files ls 3f2a9c1e
  gpulab files get 3f2a9c1e checkpoints/model.pt ./model.pt
  gpulab files put 3f2a9c1e data.tar --to inputs"""
)
def files() -> None:
    """A job's run directory: list it, download from it, upload to it (yours only)."""


def base(job: JSONObject) -> str:
    return f"/files/jobs/{job['id']}/"


@files.command(
    "ls",
    epilog="""\b
Examples:
  gpulab files ls 3f2a9c1e
  gpulab files ls 3f2a9c1e checkpoints -o json""",
)
@click.argument("job", shell_complete=complete_job)
@click.argument("path", default="")
@output_option
def list_files(job: str, path: str, output: str) -> None:
    """The files in JOB's run directory, or in its folder PATH."""
    portal = context.portal()
    listing = portal.get(base(resolve(portal, job)), path=path)
    if output == "json":
        emit_json(listing)
        return
    if not listing["entries"]:
        note(f"{listing['path'] or 'The run directory'} is empty.")
        return
    entries = listing["entries"]
    rows = ([e["shown"], e["kind"], "" if e["kind"] == "dir" else e["size"], _time(e["mtime"])] for e in entries)
    table(["NAME", "KIND", "BYTES", "MODIFIED"], rows)


@files.command(
    "get",
    epilog="""\b
Examples:
  gpulab files get 3f2a9c1e output.log
  gpulab files get 3f2a9c1e checkpoints/model.pt ~/models/   # interrupted? the same command goes on""",
)
@click.argument("job", shell_complete=complete_job)
@click.argument("path")
@click.argument("destination", required=False, type=click.Path(path_type=Path))
def get(job: str, path: str, destination: Path | None) -> None:
    """Download the file PATH of JOB's run directory (to DESTINATION, a file or a folder; else here).

    The bytes go to a hidden .part file beside it first; a download that was interrupted goes on from there, as long
    as it is the same job's same file, unchanged since."""
    portal = context.portal()
    found = resolve(portal, job)
    remote = path.strip("/")
    name = posixpath.basename(remote)
    if name in ("", ".", ".."):
        raise click.UsageError(f"{path!r} does not name a file: give its path, e.g. checkpoints/model.pt.")
    entry = _entry(portal, found, remote)
    target = destination or Path(name)
    if target.is_dir():
        target = target / name
    partial = partial_path(target, str(found["id"]), remote, entry)
    have = partial.stat().st_size if partial.exists() else 0
    response = _download(portal, base(found) + "download/", remote, have)
    if response.status_code != 206 or _range_start(response) != have:
        have = 0  # the whole file came (or the part held more than the file): start over
    total = have + int(response.headers.get("Content-Length", 0))
    if have:
        note(f"Going on from byte {have} of {total}.")
    got = have
    interrupted = f"Interrupted after {{}} of {total} bytes; the same command goes on from there."
    try:
        with partial.open("ab" if have else "wb") as out, progress(target.name, total, have) as advance:
            for block in response.iter_content(READ):
                out.write(block)
                got += len(block)
                advance(len(block))
    except requests.RequestException:
        raise exits.Failure(interrupted.format(got)) from None
    if got != total:
        raise exits.Failure(interrupted.format(got))
    partial.replace(target)
    note(f"Saved {target} ({total} bytes).")


def partial_path(target: Path, job_id: str, remote: str, entry: JSONObject) -> Path:
    """Where a download keeps its bytes until they are all there: named after this job's file as it was when the
    download began, so another job's file of that name, or this one rewritten since (a checkpoint is), starts over
    instead of being joined to it."""
    stamp = hashlib.sha256(f"{job_id}\0{remote}\0{entry['size']}\0{entry['mtime']}".encode()).hexdigest()[:12]
    return target.with_name(f".{target.name}.{stamp}{PART}")


def _entry(portal: Portal, job: JSONObject, remote: str) -> JSONObject:
    """The listing's entry of the file `remote` (its size and time name the part file); exit 3 in words if none."""
    folder, name = posixpath.split(remote)
    listing = portal.get(base(job), path=folder)
    for entry in listing["entries"]:
        if entry["name"] == name:
            if entry["kind"] != "file":
                raise exits.Refused(f"{remote} is not a file ({entry['kind']}): `gpulab files ls` shows what it is.")
            return cast(JSONObject, entry)
    raise exits.Refused(f"No file {remote} in the run directory of job {short(job)}: not found.")


def _range_start(response: requests.Response) -> int | None:
    """Where a 206 answer's bytes start (`Content-Range: bytes START-END/SIZE`)."""
    unit, _, spec = response.headers.get("Content-Range", "").partition(" ")
    start = spec.split("-", 1)[0]
    return int(start) if unit == "bytes" and start.isdigit() else None


def _download(portal: Portal, address: str, path: str, have: int) -> requests.Response:
    params = {"path": path}
    if have:
        try:
            return portal.send("GET", address, params=params, headers={"Range": f"bytes={have}-"}, stream=True)
        except Refused as exc:
            if exc.status != 416:  # 416: the part is no shorter than the file (it changed): start over
                raise
    return portal.send("GET", address, params=params, stream=True)


@files.command(
    "put",
    epilog="""\b
Examples:
  gpulab files put 3f2a9c1e data.tar
  gpulab files put 3f2a9c1e data.tar --to inputs --name train.tar   # interrupted? the same command goes on""",
)
@click.argument("job", shell_complete=complete_job)
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--to", "folder", default="", help="The folder of the run directory to put it in (default: its top).")
@click.option("--name", help="The file's name there (default: SOURCE's).")
@click.option("--restart", is_flag=True, help="Start over instead of going on from what an earlier try sent.")
def put(job: str, source: Path, folder: str, name: str | None, restart: bool) -> None:
    """Upload SOURCE to JOB's run directory, in pieces; an interrupted upload goes on where it stopped."""
    portal = context.portal()
    found = resolve(portal, job)
    address = base(found) + "upload/"
    name = name or source.name
    size = source.stat().st_size
    under_way = (portal.url, str(found["id"]), folder, name)
    sent = 0 if restart else portal.get(address, path=folder, name=name)["received"]
    if sent and (sent > size or not uploads.same_source(*under_way, source)):
        note(f"What the portal holds of {name} came from another file, or this one changed since: starting over.")
        sent = 0
    elif sent:
        note(f"Going on from byte {sent} of {size}.")
    uploads.started(*under_way, source)
    with source.open("rb") as data, progress(name, size, sent) as advance:
        for received in _pieces(portal, address, data, folder=folder, name=name, size=size, sent=sent):
            advance(received - sent)
            sent = received
    uploads.finished(*under_way)
    note(f"Uploaded {name} ({size} bytes).")


def _pieces(
    portal: Portal, address: str, data: BinaryIO, *, folder: str, name: str, size: int, sent: int
) -> Iterator[int]:
    """Send the file from `sent` on, piece by piece; yields how much the portal has after each."""
    chunk = CHUNK
    while True:
        data.seek(sent)
        piece = data.read(chunk)
        params = {"path": folder, "name": name, "size": size, "offset": sent}
        headers = {"Content-Type": "application/octet-stream"}
        try:
            state = portal.request("PUT", address, params=params, data=piece, headers=headers)
        except Refused as exc:
            if exc.status == 413 and chunk > SMALLEST_CHUNK:
                chunk //= 2  # this portal takes smaller pieces
                continue
            raise
        sent = state["received"]
        yield sent
        if state["complete"]:
            return


@contextmanager
def progress(name: str, total: int, done: int) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr while it is a terminal (scripts' logs get none); yields `advance(bytes)`."""
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=console, disable=not console.is_terminal, transient=True) as bar:
        task = bar.add_task(name, total=total, completed=done)
        yield lambda count: bar.advance(task, count)


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M")
