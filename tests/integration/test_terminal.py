"""A shell inside a running job on the local SLURM (sshd on 127.0.0.1, `srun --overlap --pty bash -l`), relayed by
the portal's uvicorn over the Redis channel layer to xterm.js in Chromium; refusals and the end of the job."""

from __future__ import annotations

import json
import os
import re
import subprocess
from urllib.parse import urlencode

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from playwright.sync_api import expect
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from clusters.choices import RunAs
from clusters.identity import set_cluster_username
from jobs.models import JobEvent

from .jobs_api import launch
from .test_browser import log_in, page  # noqa: F401  (the Chromium page fixture)
from .ws import session_cookie

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
SHOTS = os.environ.get("GPULAB_SHOTS", "/tmp")


def running_job(api_for, user, job_state, *, gpus: int = 1, seconds: int = 240):
    return job_state(launch(api_for, user, gpus_per_node=gpus, seconds=seconds, time_minutes=5), "running")


# What xterm.js's screen shows, as text (a JavaScript expression for page.evaluate / wait_for_function).
SCREEN = (
    "window.gpulabTerminal && (() => { const b = gpulabTerminal.buffer.active; const lines = []; "
    "for (let i = 0; i < b.length; i++) lines.push(b.getLine(i).translateToString(true)); "
    "return lines.join('\\n'); })()"
)


def type_at_prompt(browser_page, keys: str, *, prompt: str = "$") -> None:
    """Once the socket is open and the shell's prompt shows, type `keys` into the terminal."""
    expect(browser_page.locator("#terminal-status")).to_have_attribute("data-state", "open", timeout=20_000)
    browser_page.wait_for_function(f"({SCREEN}).includes({prompt!r})", timeout=30_000)
    browser_page.locator("#terminal .xterm-helper-textarea").focus()
    browser_page.keyboard.type(keys)


def free_gpus() -> int:
    """GPUs of the local node no job holds now."""
    words = subprocess.check_output(["scontrol", "show", "node", "-o"], text=True).split()
    fields = dict(word.split("=", 1) for word in words if "=" in word)
    held = re.search(r"gres/gpu=(\d+)", fields.get("AllocTRES", ""))
    return int(re.search(r"gres/gpu=(\d+)", fields["CfgTRES"]).group(1)) - (int(held.group(1)) if held else 0)


def open_socket(web, user, job, *, cols: int = 100, rows: int = 30, target: str = ""):
    query = urlencode({"cols": cols, "rows": rows, **({"target": target} if target else {})})
    return connect(
        web.url.replace("http://", "ws://") + f"/ws/jobs/{job.pk}/terminal/?{query}",
        additional_headers={"Cookie": f"sessionid={session_cookie(user)}", "Origin": web.url},
        open_timeout=15,
    )


def plain(output: str) -> str:
    """Terminal output without its escape sequences (colours, titles, bracketed-paste switches)."""
    return ESCAPES.sub("", output)


def wait_text(socket, *, timeout: float = 30) -> str:
    """The next text (control) frame, past the shell's output."""
    while True:
        frame = socket.recv(timeout=timeout)
        if isinstance(frame, str):
            return frame


def read_until(socket, predicate, *, timeout: float = 30) -> tuple[str, str | None]:
    """The shell's output up to the first time predicate(output) holds, up to a {"closed": …} message, or up to
    `timeout` seconds of silence (then the caller's assertion shows what came)."""
    output, closed = "", None
    while not predicate(output) and closed is None:
        try:
            frame = socket.recv(timeout=timeout)
        except TimeoutError:
            break
        if isinstance(frame, bytes):
            output += frame.decode(errors="replace")
        else:
            closed = json.loads(frame).get("closed") or closed
    return output, closed


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_student_types_in_a_terminal_inside_the_running_job_and_reads_the_answer(
    worker,
    web,
    page,  # noqa: F811
    alice,
    cluster,
    sleep_template,
    api_for,
    job_state,
):
    job = running_job(api_for, alice, job_state)
    log_in(page, web, "alice")
    page.goto(f"{web.url}/jobs/{job.pk}/")
    page.click("#open-terminal")
    screen = SCREEN
    type_at_prompt(page, "hostname; echo $SLURM_JOB_ID; nvidia-smi -L\n")  # once bash's prompt shows
    host = subprocess.run(["hostname"], capture_output=True, text=True, check=True).stdout.strip()
    page.wait_for_function(f"({screen}).includes('GPU 0:')", timeout=30_000)
    text = page.evaluate(screen)
    lines = [line.strip() for line in text.splitlines()]
    assert job.scheduler_id in lines, text  # echo $SLURM_JOB_ID, inside the job's allocation
    assert any(line.startswith("GPU 0:") for line in lines) and host in text, text
    expect(page.locator(".xterm-rows")).to_contain_text("GPU 0:")  # drawn on the page, not only in the buffer
    page.screenshot(path=f"{SHOTS}/gpulab-terminal-laptop.png")
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    type_at_prompt(page, "stty size\n")
    page.wait_for_function(f"/\\n\\d+ \\d+/.test({screen})", timeout=20_000)
    page.screenshot(path=f"{SHOTS}/gpulab-terminal-phone.png")
    subprocess.run(["scancel", job.scheduler_id], check=True)  # the job ends: the page says the terminal closed
    expect(page.locator("#terminal-status")).to_have_attribute("data-state", "closed", timeout=60_000)
    expect(page.locator("#terminal-status")).to_contain_text("ended")
    page.screenshot(path=f"{SHOTS}/gpulab-terminal-closed-phone.png")


@pytest.mark.browser
@pytest.mark.slurm_exclusive  # its first job takes every free GPU so that the second one waits
@pytest.mark.timeout(360)
def test_the_terminal_button_appears_when_the_job_starts_while_its_page_is_open(
    worker,
    web,
    page,  # noqa: F811
    alice,
    bob,
    cluster,
    sleep_template,
    api_for,
    job_state,
):
    # As the students' own users (sudo rule): other runs on the shared cluster cancel the service account's jobs.
    students = os.environ.get("GPULAB_STUDENT_USERS", "labalice labbob").split()
    cluster.run_as = RunAs.SUDO
    cluster.save()
    set_cluster_username(alice, students[0])
    set_cluster_username(bob, students[1])
    free = free_gpus()  # bob's job takes the node's free GPUs (others' runs may hold the rest): alice's job waits
    blocker = running_job(api_for, bob, job_state, gpus=free) if free else None
    job = job_state(launch(api_for, alice, gpus_per_node=1, seconds=240, time_minutes=5), "pending")
    log_in(page, web, "alice")
    page.goto(f"{web.url}/jobs/{job.pk}/")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "pending")
    expect(page.locator("#open-terminal")).to_have_count(0)
    if blocker:
        subprocess.run(["scancel", blocker.scheduler_id], check=True)
    expect(page.locator("#job-state")).to_have_attribute("data-state", "running", timeout=150_000)
    expect(page.locator("#open-terminal")).to_be_visible()  # no reload: the state panel brought it
    page.screenshot(path=f"{SHOTS}/gpulab-terminal-button-appeared-laptop.png")
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator("#open-terminal").scroll_into_view_if_needed()
    page.screenshot(path=f"{SHOTS}/gpulab-terminal-button-appeared-phone.png")
    page.click("#open-terminal")
    expect(page.locator("#terminal-status")).to_have_attribute("data-state", "open", timeout=20_000)


def test_another_student_is_refused_the_terminal_page_and_socket(
    worker, web, alice, bob, carol, client, cluster, sleep_template, api_for, job_state
):
    job = running_job(api_for, alice, job_state)
    for user in (bob, carol):
        client.force_login(user)
        assert client.get(f"/jobs/{job.pk}/terminal/").status_code == 404
        with pytest.raises(InvalidStatus) as refusal:
            open_socket(web, user, job)
        assert refusal.value.response.status_code == 403  # closed before the handshake, as a missing job
    client.force_login(alice)
    assert client.get(f"/jobs/{job.pk}/terminal/").status_code == 200


def test_terminal_closes_with_a_message_when_the_job_ends(
    worker, web, alice, cluster, sleep_template, api_for, job_state
):
    job = running_job(api_for, alice, job_state)
    with open_socket(web, alice, job) as socket:
        socket.send(b"echo ready-$((6*7))\n")
        output, closed = read_until(socket, lambda out: "ready-42" in out)
        assert "ready-42" in output and closed is None
        subprocess.run(["scancel", job.scheduler_id], check=True)
        _, closed = read_until(socket, lambda out: False, timeout=60)
        assert closed and ("ended" in closed)


def test_the_remote_pty_follows_the_window_and_a_cluster_with_another_host_key_is_refused_with_the_reason(
    worker, web, alice, cluster, sleep_template, api_for, job_state
):
    job = running_job(api_for, alice, job_state)
    with open_socket(web, alice, job, cols=100, rows=30) as socket:
        # The remote PTY is a terminal's: it echoes, ends lines with CR LF, and has the page's size, then the new one.
        socket.send(b"stty size\n")
        output, _ = read_until(socket, lambda out: "30 100\r\n" in out)
        assert "30 100\r\n" in output and "stty size" in output, output
        socket.send(json.dumps({"resize": [132, 41]}))
        # ssh sends the window change when it handles its SIGWINCH, which on a busy machine may come after keys typed
        # at once: ask again, as a person would, until the new size is there.
        output = ""
        for _ in range(10):
            socket.send(b"stty size\n")
            more, _ = read_until(socket, lambda out: "41 132\r\n" in out, timeout=3)
            output += more
            if "41 132\r\n" in output:
                break
        assert "41 132\r\n" in output, output

    other = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    cluster.host_key = other  # the login node no longer shows the pinned key: nobody's keystrokes go to it
    cluster.save(update_fields=["host_key"])
    with open_socket(web, alice, job) as socket:
        socket.send(b"echo typed-too-soon\n")
        output, closed = read_until(socket, lambda out: False, timeout=30)
    assert closed and "did not offer the pinned host key" in closed and "re-pin" in closed, closed
    assert "typed-too-soon" not in output


def test_the_terminal_opens_in_the_run_directory_with_the_jobs_variables(
    worker, web, alice, cluster, sleep_template, api_for, job_state
):
    job = running_job(api_for, alice, job_state)
    with open_socket(web, alice, job) as socket:
        socket.send(b'echo "in-dir=$PWD job-var=$GPULAB_JOB_ID files-var=$GPULAB_FILES_DIR"\n')
        output, _ = read_until(socket, lambda out: re.search(r"in-dir=\S+ job-var=\S+ files-var=\S+\r\n", out))
    answer = re.search(r"in-dir=(\S+) job-var=(\S+) files-var=(\S+)\r\n", plain(output))
    assert answer, output
    assert answer[1].endswith(f"/jobs/{job.pk}") and answer[2] == str(job.pk) and answer[3].startswith("/"), output


def test_instructor_opens_a_terminal_and_the_students_terminal_and_timeline_say_so(
    worker, web, alice, instructor, cluster, sleep_template, api_for, job_state
):
    job = running_job(api_for, alice, job_state)
    with open_socket(web, alice, job) as students, open_socket(web, instructor, job) as socket:
        told = json.loads(wait_text(students))
        assert "(instructor) opened a terminal in this job" in told["notice"]
        socket.send(b"whoami\n")
        shared = os.environ.get("GPULAB_SHARED_USER", "labshared")  # the job's identity: never the service account
        as_user = re.compile(rf"^\r?{shared}\r?$", re.MULTILINE)
        output, _ = read_until(socket, lambda out: as_user.search(plain(out)))
        assert as_user.search(plain(output)), output
    note = JobEvent.objects.get(job=job, actor=instructor)
    assert "opened a terminal" in note.message


def test_terminal_left_without_typing_closes_with_a_message(
    worker, portal_env, tmp_path, alice, cluster, sleep_template, api_for, job_state
):
    from .conftest import start_web

    job = running_job(api_for, alice, job_state)
    env = {**portal_env, "TERMINAL_IDLE_SECONDS": "3", "TERMINAL_CHECK_SECONDS": "1"}
    web = start_web(env, tmp_path / "web.log")
    try:
        with open_socket(web, alice, job) as socket:
            socket.send(b"echo typed-$((6*7))\n")
            output, closed = read_until(socket, lambda out: "typed-42" in out)
            assert "typed-42" in output and closed is None
            _, closed = read_until(socket, lambda out: False, timeout=60)
        assert closed and "without typing" in closed
        assert job_state(job, "running")  # the job itself goes on
    finally:
        web.stop()
