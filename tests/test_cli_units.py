"""The command-line client's parts that need no portal: the token file, the portal's refusals in words, usage errors.
Its commands against the real portal are in tests/integration/test_cli.py."""

import stat

import pytest
from click.testing import CliRunner
from gpulab_cli import profiles
from gpulab_cli.client import describe
from gpulab_cli.main import cli


@pytest.fixture
def config_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return tmp_path / "gpulab"


def test_the_token_file_is_the_user_s_alone_and_a_loose_one_is_narrowed(config_home):
    profiles.save(profiles.Profile("default", "https://a.example", "alice", "t1"), make_default=True)
    saved = config_home / "profiles.json"
    assert stat.S_IMODE(config_home.stat().st_mode) == 0o700 and stat.S_IMODE(saved.stat().st_mode) == 0o600
    saved.chmod(0o644)  # copied by hand from another machine
    assert profiles.load(None).token == "t1"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert [p.name for p in config_home.iterdir()] == ["profiles.json"]  # no temporary file left behind


def test_the_default_profile_moves_on_when_it_is_forgotten(config_home):
    profiles.save(profiles.Profile("default", "https://a.example", "alice", "t1"), make_default=True)
    profiles.save(profiles.Profile("lab2", "https://b.example", "alice2", "t2"), make_default=False)
    assert profiles.load(None).name == "default" and profiles.load("lab2").token == "t2"
    profiles.forget("default")
    assert profiles.load(None).name == "lab2"
    with pytest.raises(profiles.ProfileMissing, match="--profile nope login"):
        profiles.load("nope")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"detail": "No such job."}, "No such job."),
        ({"non_field_errors": ["Unable to log in with provided credentials."]}, "Unable to log in with provided"),
        ({"params": {"seconds": ["At most 600."]}}, "seconds: At most 600."),
        ({"template": ["No template with this slug is available to you."]}, "template: No template with this slug"),
        ({"state": ["Unknown state; one of queued, …"], "mine": ["One of 1, true."]}, "mine: One of 1, true."),
    ],
)
def test_the_portal_s_refusals_are_shown_in_its_own_words(body, words):
    assert words in describe(body)


@pytest.mark.parametrize(
    "args",
    [
        ["launch", "sleep-echo", "-p", "seconds"],
        ["launch", "sleep-echo", "-p", "seconds=1", "-p", "seconds=2"],
        ["ps", "-o", "yaml"],
        ["login", "gpulab.example.edu"],
        ["cancel"],
    ],
)
def test_usage_errors_exit_2_before_anything_is_asked_of_a_portal(config_home, args):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and result.stdout == "" and "Error" in result.stderr


def test_every_command_shows_an_example(config_home):
    for name, command in cli.commands.items():
        commands = getattr(command, "commands", {name: command})
        for sub_name, sub in commands.items():
            assert "gpulab " in (sub.epilog or ""), f"{name} {sub_name}"


def test_shell_completion_as_documented_completes_commands(config_home):
    env = {"_GPULAB_COMPLETE": "bash_complete", "COMP_WORDS": "gpulab la", "COMP_CWORD": "1"}
    result = CliRunner().invoke(cli, [], prog_name="gpulab", env=env)
    assert result.exit_code == 0 and result.stdout.split() == ["plain,launch"]


def test_text_from_the_portal_cannot_command_the_terminal_that_shows_it():
    """A job's log, a file's name or a student's parameter is written by whoever ran the job: a TA's terminal must not
    take an escape sequence in it for its own (a clipboard write, a title report, a cursor move). Control and
    invisible format characters are written out; a log keeps its colours and line breaks."""
    from gpulab_cli.exits import Refused
    from gpulab_cli.output import safe

    hostile = "ok\x1b]52;c;aGk=\x07 \x1b[2J\x9b31m \u202egnp.exe\tend\r\n"
    assert safe(hostile) == "ok\\x1b]52;c;aGk=\\x07 \\x1b[2J\\x9b31m \\u202egnp.exe\tend\r\n"
    assert safe("\x1b[31mloss 2.1\x1b[0m\x1b]0;title\x07", colours=True) == (
        "\x1b[31mloss 2.1\x1b[0m\\x1b]0;title\\x07"
    )
    assert Refused("No such job \x1b[2J.").format_message() == "No such job \\x1b[2J."


def test_a_redirected_sign_in_never_sends_the_password_on(config_home, monkeypatch):
    """A portal address that redirects the token request (to https, or to another host) is told, not followed: a 307
    would carry the password to wherever it points."""
    import requests
    from gpulab_cli import client

    sent = []

    def answer(self, method, url, **kwargs):
        sent.append((method, url, kwargs.get("allow_redirects", True)))
        response = requests.Response()
        response.status_code, response.headers["Location"] = 307, "https://elsewhere.example/api/v1/token/"
        return response

    monkeypatch.setattr(requests.Session, "request", answer)
    with pytest.raises(client.Unavailable, match=r"sends this request to https://elsewhere\.example"):
        client.Portal("http://portal.example").obtain_token("alice", "secret")
    assert sent == [("POST", "http://portal.example/api/v1/token/", False)]


def test_an_upload_goes_on_only_from_the_file_it_was_started_from_unchanged(config_home, tmp_path):
    """The portal holds an interrupted upload's bytes but cannot say whose they are: `files put` goes on only when
    the same local file, unchanged, is sent to the same place; a file made again, or another one, starts over."""
    import os

    from gpulab_cli import uploads

    data, other = tmp_path / "data.tar", tmp_path / "other.tar"
    data.write_bytes(b"x" * 100)
    other.write_bytes(b"y" * 100)
    place = ("https://a.example", "3f2a9c1e-0000-0000-0000-000000000000", "inputs", "train.tar")
    uploads.started(*place, data)
    assert uploads.same_source(*place, data) and not uploads.same_source(*place, other)
    assert not uploads.same_source("https://a.example", place[1], "", "train.tar", data)  # another folder
    os.utime(data, ns=(1, 1))  # made again since
    assert not uploads.same_source(*place, data)
    assert stat.S_IMODE((config_home / "uploads.json").stat().st_mode) == 0o600
    uploads.finished(*place)
    assert not uploads.same_source(*place, data) and not uploads.same_source(*place, other)


def test_a_redirected_terminal_is_told_and_its_token_never_sent_on(config_home):
    """The portal's address answers the terminal's handshake with a redirect: `gpulab shell` says where it points and
    opens nothing there, so the token goes nowhere else (websocket-client would follow it with the token)."""
    import http.server
    import json
    import threading

    job_id = "0b1c2d3e-0000-4000-8000-000000000001"
    elsewhere: list[str] = []

    class Other(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            elsewhere.append(self.headers.get("Authorization", ""))
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Other)

    class Portal(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.startswith("/api/v1/jobs/"):
                body = json.dumps({"id": job_id}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_response(302)
            self.send_header("Location", f"ws://127.0.0.1:{other.server_port}/steal")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    portal = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Portal)
    for server in (portal, other):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{portal.server_port}"
        profiles.save(profiles.Profile(name="default", url=url, username="alice", token="SECRET"), make_default=True)
        result = CliRunner().invoke(cli, ["shell", job_id], prog_name="gpulab")
    finally:
        portal.shutdown()
        other.shutdown()
    assert result.exit_code == 1 and "answered the terminal with a redirect, which is not followed" in result.stderr
    assert elsewhere == []


def test_a_job_s_output_cannot_write_the_clipboard_of_the_terminal_showing_it():
    from gpulab_cli.commands.shell import CLIPBOARD_WRITE

    for ending in (b"\x07", b"\x1b\\"):
        assert CLIPBOARD_WRITE.sub(b"", b"before\x1b]52;c;Y3VybCBldmls" + ending + b"after") == b"beforeafter"
    assert CLIPBOARD_WRITE.sub(b"", b"\x1b]0;title\x07\x1b[1mbold") == b"\x1b]0;title\x07\x1b[1mbold"
