"""wait and logs: following a job to its end, by its state or by its log."""

from __future__ import annotations

import json
import sys
import time
from typing import cast

import click

from .. import context, exits
from ..client import JSONObject, Portal, Unavailable
from ..job_ids import COMPLETED, TERMINAL_STATES, complete_job, resolve, short
from ..output import emit_json, note, output_option, safe

RETRIES = 5  # a portal restarting or a cluster's SSH hiccup does not end a long wait

INTERVAL = click.option(
    "--interval", type=click.FloatRange(min=0.2), default=2.0, show_default=True, help="Seconds between two looks."
)


def wait_until_ended(portal: Portal, job: JSONObject, *, interval: float, timeout: float | None) -> JSONObject:
    """The job once it has reached a terminal state; each change of state (and why it waits) told on stderr."""
    deadline = None if timeout is None else time.monotonic() + timeout
    told = None
    while True:
        said = describe_state(job)
        if said != told:
            note(f"{short(job)}: {said}")
            told = said
        if job["state"] in TERMINAL_STATES:
            return job
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise exits.Failure(f"Job {short(job)} is still {job['state']} after {timeout:g} s.")
        time.sleep(interval if left is None else min(interval, left))
        # Past the deadline, no more looking again: --timeout bounds the whole wait.
        job = patiently(portal, f"/jobs/{job['id']}/", interval=interval, retries=left is None or left > interval)


def patiently(
    portal: Portal, endpoint: str, /, *, interval: float, retries: bool = True, **params: object
) -> JSONObject:
    """GET, looking again a few times while the portal (or the cluster behind it) cannot answer."""
    for attempt in range(1, RETRIES if retries else 1):
        try:
            return cast(JSONObject, portal.get(endpoint, **params))
        except Unavailable as exc:
            note(f"{exc} Trying again ({attempt}/{RETRIES - 1}).")
            time.sleep(interval * attempt)
    return cast(JSONObject, portal.get(endpoint, **params))  # the last try: its failure ends the command


def describe_state(job: JSONObject) -> str:
    waiting = job.get("wait") or {}
    if waiting.get("reason"):
        position = f", {waiting['position']} in line" if waiting.get("position") else ""
        return f"{job['state']} ({waiting['reason']}{position})"
    return str(job["state"])


def conclude(job: JSONObject, output: str) -> None:
    """Show the ended job; exit 4 unless it completed."""
    if output == "json":
        emit_json(job)
    if job["state"] == COMPLETED:
        note(f"Job {short(job)} completed (exit code {job['exit_code']}).")
        return
    why = job.get("error") or (f"exit code {job['exit_code']}" if job.get("exit_code") is not None else "")
    raise exits.JobDidNotComplete(f"Job {short(job)} {job['state'].replace('_', ' ')}" + (f": {why}" if why else "."))


@click.command(
    epilog="""\b
Examples:
  gpulab wait 3f2a9c1e && echo finished
  gpulab wait 3f2a9c1e --timeout 600 -o json"""
)
@click.argument("job", shell_complete=complete_job)
@INTERVAL
@click.option("--timeout", type=click.FloatRange(min=0), help="Give up (exit 1) after this many seconds.")
@output_option
def wait(job: str, interval: float, timeout: float | None, output: str) -> None:
    """Wait until JOB has ended: exit 0 if it completed, 4 if it failed, was cancelled, timed out or was lost."""
    portal = context.portal()
    conclude(wait_until_ended(portal, resolve(portal, job), interval=interval, timeout=timeout), output)


@click.command(
    epilog="""\b
Examples:
  gpulab logs 3f2a9c1e
  gpulab logs -f 3f2a9c1e                # until the job has ended and its log is read whole
  gpulab logs 3f2a9c1e -o json | jq -r .data"""
)
@click.argument("job", shell_complete=complete_job)
@click.option("-f", "--follow", is_flag=True, help="Keep reading until the job has ended.")
@click.option("--stream", help="Kubernetes: which pod and container (the job's streams).")
@click.option(
    "--interval", type=click.FloatRange(min=0.2), default=1.0, show_default=True, help="Seconds between two reads."
)
@output_option
def logs(job: str, follow: bool, stream: str | None, interval: float, output: str) -> None:
    """Print JOB's log.

    With -o json: one JSON object {"id", "offset", "data", "done"}; with -f, one such object per line for each
    piece read."""
    portal = context.portal()
    found = resolve(portal, job)
    offset, done = 0, False
    data: list[str] = []
    while True:
        chunk = patiently(portal, f"/jobs/{found['id']}/log/", interval=interval, offset=offset, stream=stream)
        offset, done = chunk["offset"], chunk["done"]
        if output == "json" and follow:
            if chunk["data"] or done:
                piece = {"id": found["id"], "offset": offset, "data": chunk["data"], "done": done}
                click.echo(json.dumps(piece, ensure_ascii=False))
        elif output == "json":
            data.append(chunk["data"])
        else:
            write_raw(chunk["data"])
        # Nothing new (read to the end, or a job not on its cluster yet): stop, or with -f look again in a while.
        idle = chunk["eof"] or not chunk["data"]
        if done or (idle and not follow):
            break
        if idle:
            time.sleep(interval)
    if output == "json" and not follow:
        emit_json({"id": found["id"], "offset": offset, "data": "".join(data), "done": done})


def write_raw(text: str) -> None:
    """The log as the job wrote it, any locale; on a terminal with its control characters written out but its
    colours kept (output.safe: the job's author, maybe another student, must not command the reader's terminal)."""
    if not text:
        return
    if sys.stdout.isatty():
        text = safe(text, colours=True)
    sys.stdout.flush()  # whatever was written as text goes first
    raw = getattr(sys.stdout, "buffer", None)
    if raw is None:
        sys.stdout.write(text)
        return
    raw.write(text.encode("utf-8", "replace"))
    raw.flush()
