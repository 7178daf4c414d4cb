"""JupyterLab sessions on the local SLURM for the tests and bench/jupyter_roundtrip.py: launch the built-in
template in the lab's Python (scripts/lab_venv.sh), wait for its server through the portal, run code in a kernel."""

from __future__ import annotations

import itertools
import json
import os
import time
import uuid

import requests
from playwright.sync_api import expect
from websockets.sync.client import connect

from jobs.builtin import load_builtin_templates
from jobs.models import Job, JobTemplate

from .conftest import wait_for
from .ws import session_cookie

LAB_VENV = os.environ.get("GPULAB_LAB_VENV", "/opt/gpulab-lab-venv")
PREAMBLE = f"export PYTHON={LAB_VENV}/bin/python\n"


def jupyter_template(course):
    return next(t for t in load_builtin_templates([course]) if t.slug == "jupyterlab")


def launch_notebook(api_for, user, cluster, **params) -> Job:
    cluster.preamble = PREAMBLE
    cluster.save(update_fields=["preamble"])
    if not JobTemplate.objects.filter(slug="jupyterlab").exists():  # a test may have changed the loaded one
        jupyter_template(cluster.courses.first())
    values = {"gpus_per_node": 1, "time_minutes": 10, "cpus_per_task": 1, **params}
    response = api_for(user).post(
        "/api/v1/jobs/", {"template": "jupyterlab", "cluster": cluster.name, "params": values}, format="json"
    )
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def new_notebook_cell(lab):
    """A new notebook from the launcher in JupyterLab's frame (`lab`, a FrameLocator), once it holds its kernel: the
    editor of its first cell. The cell's editor knows its language once the kernel answered kernel_info; before that
    the notebook is still connecting, and what is typed or run then is lost: the typed code never shows in the cell,
    or Shift+Enter only moves on to a new cell without asking any kernel."""
    lab.locator('.jp-LauncherCard[data-category="Notebook"]').first.click(timeout=60_000)
    editor = lab.locator(".jp-Notebook .jp-Cell .cm-content").first
    expect(editor).to_be_visible(timeout=60_000)
    expect(lab.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(1, timeout=60_000)
    expect(lab.locator(".jp-Notebook .jp-Cell .cm-content[data-language='python']")).to_have_count(1, timeout=60_000)
    return editor


def type_and_run(page, lab, editor, code: str):
    """Type `code` into the cell (focused by the locator, and checked there: keys sent before the editor holds the
    focus land nowhere) and run it once with Shift+Enter; the cell's first output, to read."""
    editor.click()
    editor.press_sequentially(code)
    expect(editor).to_contain_text(code)
    editor.click()
    page.keyboard.press("Shift+Enter")  # once: the notebook holds its kernel (new_notebook_cell), so it must answer
    return lab.locator(".jp-OutputArea-output").first


class Browserless:
    """A signed-in user's requests to the portal's JupyterLab path, as JupyterLab's own page makes them."""

    def __init__(self, web, user, job):
        self.web, self.job = web, job
        self.base = f"{web.url}/jobs/{job.pk}/lab/"
        self.http = requests.Session()
        self.http.cookies.set("sessionid", session_cookie(user))
        self.http.headers["Origin"] = web.url

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.http.get(self.base + path, timeout=30, **kwargs)

    def post(self, path: str, body: dict) -> requests.Response:
        return self.http.post(self.base + path, json=body, timeout=30)

    def wait_ready(self, timeout: float = 120) -> None:
        last = []

        def answers() -> bool:
            last[:] = [self.get("api/status")]
            return last[0].status_code == 200

        try:
            wait_for(answers, timeout=timeout, what="JupyterLab to answer")
        except AssertionError:
            self.job.refresh_from_db()
            raise AssertionError(
                f"JupyterLab never answered: {last[0].status_code} {last[0].text[:300]!r}; the job is "
                f"{self.job.state} {self.job.error!r}"
            ) from None

    def socket(self, path: str, *, base: str | None = None, headers: dict | None = None, subprotocols=None):
        url = (base or self.base).replace("http://", "ws://") + path
        cookie = {"Cookie": f"sessionid={self.http.cookies['sessionid']}", "Origin": self.web.url}
        return connect(
            url, additional_headers=headers or cookie, open_timeout=15, max_size=2**24, subprotocols=subprotocols
        )


def execute_request(code: str) -> tuple[str, str]:
    msg_id = uuid.uuid4().hex
    header = {
        "msg_id": msg_id,
        "msg_type": "execute_request",
        "username": "",
        "session": uuid.uuid4().hex,
        "version": "5.3",
        "date": "",
    }
    content = {"code": code, "silent": False, "store_history": False, "user_expressions": {}, "allow_stdin": False}
    message = {
        "header": header,
        "parent_header": {},
        "metadata": {},
        "content": content,
        "channel": "shell",
        "buffers": [],
    }
    return msg_id, json.dumps(message)


V1_PROTOCOL = "v1.kernel.websocket.jupyter.org"  # JupyterLab 4's binary kernel wire protocol


def to_v1(channel: str, message: dict) -> bytes:
    """A kernel message in the v1 framing: offsets (little-endian uint64), channel, header, parent, metadata,
    content, buffers; what JupyterLab sends once the server chose the v1 subprotocol."""
    parts = [channel.encode()] + [json.dumps(message[k]).encode() for k in ("header", "parent_header", "metadata")]
    parts.append(json.dumps(message["content"]).encode())
    offsets = [8 * (1 + len(parts) + 1)]
    for part in parts:
        offsets.append(offsets[-1] + len(part))
    head = len(offsets).to_bytes(8, "little") + b"".join(o.to_bytes(8, "little") for o in offsets)
    return head + b"".join(parts)


def from_v1(frame: bytes) -> tuple[str, dict]:
    """The channel and header/parent_header/content of a v1 frame (the server's side of to_v1)."""
    count = int.from_bytes(frame[:8], "little")
    offsets = [int.from_bytes(frame[8 * (i + 1) : 8 * (i + 2)], "little") for i in range(count)]
    parts = [frame[a:b] for a, b in itertools.pairwise(offsets)]
    names = ("header", "parent_header", "metadata", "content")
    return parts[0].decode(), {name: json.loads(part) for name, part in zip(names, parts[1:5], strict=False)}


def kernel_info_v1(socket, *, timeout: float = 30) -> dict:
    """Ask the kernel behind a v1 socket for its info, in binary frames as JupyterLab does; the reply's content."""
    msg_id, text = execute_request("")
    message = json.loads(text)
    message["header"]["msg_type"] = "kernel_info_request"
    message["content"] = {}
    socket.send(to_v1("shell", message))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = socket.recv(timeout=max(0.1, deadline - time.monotonic()))
        assert isinstance(frame, bytes), f"a text frame on a v1 socket: {frame[:200]!r}"
        channel, reply = from_v1(frame)
        if channel == "shell" and reply["parent_header"].get("msg_id") == msg_id:
            assert reply["header"]["msg_type"] == "kernel_info_reply", reply["header"]
            return reply["content"]
    raise AssertionError(f"no kernel_info_reply within {timeout:.0f}s")


def run_code(socket, code: str, *, timeout: float = 60) -> str:
    """Run `code` in the kernel behind `socket` (the JSON protocol, no subprotocol); its stdout."""
    msg_id, text = execute_request(code)
    socket.send(text)
    out, deadline = "", time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = socket.recv(timeout=max(0.1, deadline - time.monotonic()))
        if isinstance(frame, bytes):
            continue
        message = json.loads(frame)
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = message["header"]["msg_type"]
        if kind == "stream":
            out += message["content"]["text"]
        elif kind == "error":
            raise AssertionError(f"the kernel raised: {message['content']}")
        elif kind == "status" and message["content"]["execution_state"] == "idle":
            return out
    raise AssertionError(f"no answer from the kernel within {timeout:.0f}s; got {out!r}")
