"""shell: the job's terminal (the page's Terminal) in this one, over the portal's WebSocket.

The wire is the page's (sessions/terminal.py in the portal): keys go as binary frames, the screen's size as
{"resize": [cols, rows]}; the shell's output comes back as binary frames, and {"closed": why} or {"notice": text}
as text frames. On a terminal, stdin is put in raw mode (every key goes to the job's shell, Ctrl-C included) and
restored on the way out; from a pipe, the piped text is typed and the command ends when the shell does.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shutil
import signal
import sys
import termios
import threading
import tty
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

import click
import websocket

from .. import context, exits
from ..job_ids import complete_job, resolve
from ..output import note

# The job's output goes to this terminal as ssh passes it, but for a clipboard write (OSC 52): an instructor's shell
# in a student's job must not have its clipboard set by what the student's program prints.
CLIPBOARD_WRITE = re.compile(rb"\x1b\]52;[^\x07\x1b]*(?:\x07|\x1b\\)")
# On the way out: the main screen, no mouse reporting, no bracketed paste.
RESET_MODES = "\x1b[?1049l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l"
CLOSE_REASONS = {
    4404: "No job you can see has that id: not found.",
    4403: "You may not open a terminal in this job.",
}


@click.command(
    epilog="""\b
Examples:
  gpulab shell 3f2a9c1e
  echo 'nvidia-smi; exit' | gpulab shell 3f2a9c1e
  gpulab shell 3f2a9c1e --container trainer   (a Kubernetes job's container)"""
)
@click.argument("job", shell_complete=complete_job)
@click.option("--container", "target", default="", help="Which of the job's containers (Kubernetes), if several.")
def shell(job: str, target: str) -> None:
    """A shell inside the running JOB, as on its page's Terminal, resizing with this terminal."""
    profile = context.signed_in()
    found = resolve(context.portal(), job)
    cols, rows = shutil.get_terminal_size()
    query = {"cols": cols, "rows": rows} | ({"target": target} if target else {})
    parts = urlsplit(profile.url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    url = f"{scheme}://{parts.netloc}{parts.path}/ws/jobs/{found['id']}/terminal/?{urlencode(query)}"
    try:
        # Not a browser: it names the portal's own origin, and the token (never a cookie) says who it is. No
        # redirect is followed: it would carry the token to wherever it points, as the other commands refuse to.
        socket = websocket.create_connection(
            url,
            header=[f"Authorization: Token {profile.token}"],
            origin=f"{parts.scheme}://{parts.netloc}",
            timeout=30,
            redirect_limit=0,
        )
    except websocket.WebSocketException as exc:
        if "redirect" in str(exc).lower():  # websocket-client's words when redirect_limit=0 met one
            message = (
                f"{profile.url} answered the terminal with a redirect, which is not followed: sign in again with the "
                "address the portal moved to."
            )
            raise exits.Failure(message) from None
        raise exits.Failure(f"Cannot open the job's terminal at {profile.url}: {exc}") from None
    except OSError as exc:
        raise exits.Failure(f"Cannot open the job's terminal at {profile.url}: {exc}") from None
    socket.settimeout(None)
    why = relay(socket)
    if why:
        raise exits.Refused(why)


def relay(socket: websocket.WebSocket) -> str:
    """Relays until the portal closes the socket; what it said as it closed ("" when the shell just ended)."""
    ended = Ended()
    reader = threading.Thread(target=_print_output, args=(socket, ended), daemon=True)
    reader.start()
    interactive = sys.stdin.isatty()
    resized = threading.Event()
    with _raw_input(interactive), _resizing(resized, interactive):
        _type_input(socket, reader, resized)
    reader.join(timeout=5)
    if interactive and sys.stdout.isatty():
        sys.stdout.write(RESET_MODES)  # what the job's programs may have left on: the alternate screen, the mouse
        sys.stdout.flush()
    if ended.closed:
        note(ended.closed)
    return ended.refused


@dataclass
class Ended:
    closed: str = ""  # what the portal said as it closed the terminal (the shell ended, the job ended, …)
    refused: str = ""  # why the socket was refused, in words


def _print_output(socket: websocket.WebSocket, ended: Ended) -> None:
    out = sys.stdout.buffer
    while True:
        try:
            opcode, data = socket.recv_data(control_frame=False)
        except (websocket.WebSocketConnectionClosedException, OSError):
            return
        if opcode == websocket.ABNF.OPCODE_BINARY:
            out.write(CLIPBOARD_WRITE.sub(b"", data))
            out.flush()
        elif opcode == websocket.ABNF.OPCODE_TEXT:
            message = json.loads(data or b"{}")
            if "notice" in message:
                note(str(message["notice"]))
            if "closed" in message:
                ended.closed = str(message["closed"])
        elif opcode == websocket.ABNF.OPCODE_CLOSE:
            code = int.from_bytes(data[:2], "big") if len(data) >= 2 else 1000
            if code in CLOSE_REASONS:
                ended.refused = CLOSE_REASONS[code]
            return


def _type_input(socket: websocket.WebSocket, reader: threading.Thread, resized: threading.Event) -> None:
    """stdin to the shell as it comes, and the window's size when it changed; at the end of a pipe, waits for the
    shell to end on its own. Only this thread sends, so a resize never waits on a send it interrupted."""
    fd = sys.stdin.fileno()
    while reader.is_alive():
        if resized.is_set():
            resized.clear()
            cols, rows = shutil.get_terminal_size()
            with contextlib.suppress(websocket.WebSocketException, OSError):
                socket.send(json.dumps({"resize": [cols, rows]}))
        # A short wait, not a blocking read: when the shell ends, the command ends without another key pressed.
        if not select.select([fd], [], [], 0.2)[0]:
            continue
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        try:
            socket.send_binary(data)
        except (websocket.WebSocketConnectionClosedException, OSError):
            return
    reader.join()


@contextlib.contextmanager
def _raw_input(interactive: bool) -> Iterator[None]:
    if not interactive:
        yield
        return
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)

    def restored_then_ended(signum: int, _frame: object) -> None:
        # Killed or its window closed: the user's terminal is given back as it was, then the signal does its work.
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    previous = {signum: signal.signal(signum, restored_then_ended) for signum in (signal.SIGTERM, signal.SIGHUP)}
    tty.setraw(fd)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def _resizing(resized: threading.Event, interactive: bool) -> Iterator[None]:
    """On a terminal, each resize of this window is noted; the typing loop sends it as the page's Terminal does."""
    if not interactive:
        yield
        return
    previous = signal.signal(signal.SIGWINCH, lambda *_: resized.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGWINCH, previous)
