"""The `gpulab` command (cli/) against the real portal: uvicorn serving the test database, and for the launches the
Celery worker and the local SLURM cluster behind it. Commands run through click's test runner in this process, or
as a separate `python -m gpulab_cli` process where what reaches stdout from the whole interpreter matters."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner, Result
from gpulab_cli import uploads
from gpulab_cli.commands.files import partial_path
from gpulab_cli.main import cli
from rest_framework.authtoken.models import Token
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from clusters.identity import account_for
from jobs.models import Job
from tests.conftest import PASSWORD

from .conftest import ROOT, WORKER_SUFFIX
from .jobs_api import launch
from .test_files import as_job_user, shared_user
from .ws import session_cookie

# Its own (and each test process its own): test_files.py's lab folder is removed whole after each of its tests.
LAB_DIR = "~/gpulab-cli-test" + WORKER_SUFFIX


@pytest.fixture
def config_home(tmp_path, monkeypatch):
    """The user's config directory ($XDG_CONFIG_HOME), empty: each test signs in for itself."""
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.delenv("GPULAB_PROFILE", raising=False)
    return home


@pytest.fixture
def gpulab(config_home):
    def run(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(cli, list(args), input=input, prog_name="gpulab", catch_exceptions=False)

    return run


@pytest.fixture
def sign_in(gpulab, web):
    def as_user(user, *extra: str) -> None:
        result = gpulab(*extra, "login", web.url, "-u", user.username, "--password-stdin", input=f"{PASSWORD}\n")
        assert result.exit_code == 0, result.output
        assert result.stdout == ""

    return as_user


def as_json(result: Result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_login_with_a_password_keeps_the_token_for_the_user_only_and_templates_parse_as_json(
    gpulab, sign_in, config_home, alice, cluster, sleep_template
):
    sign_in(alice)
    folder, saved = config_home / "gpulab", config_home / "gpulab" / "profiles.json"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE(saved.stat().st_mode) == 0o600
    text = saved.read_text()
    assert Token.objects.get(user=alice).key in text and PASSWORD not in text
    offered = as_json(gpulab("templates", "-o", "json"))
    assert [t["slug"] for t in offered] == ["sleep-echo"] and offered[0]["courses"] == ["hpc"]
    one = as_json(gpulab("templates", "sleep-echo", "-o", "json"))
    assert "exit_code" in [p["name"] for p in one["parameters"]]
    listed = gpulab("templates")
    assert listed.exit_code == 0 and "sleep-echo" in listed.stdout


def gpulab_process(config_home: Path, *args: str) -> subprocess.Popen:
    """`gpulab` as its own process (python -m gpulab_cli), for what must run while the test acts elsewhere."""
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(config_home),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "cli/src"), os.environ.get("PYTHONPATH", "")]),
    }
    argv = [sys.executable, "-m", "gpulab_cli", *args]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    return subprocess.Popen(argv, env=env, text=True, **pipes)


def confirm_in_browser(web, user, code: str, action: str) -> requests.Response:
    """What the user does on /cli/login/ in the browser where they are signed in: type the code, then choose."""
    browser = requests.Session()
    browser.cookies.set("sessionid", session_cookie(user))
    page = web.url + "/cli/login/"
    browser.get(page, timeout=30).raise_for_status()
    form = {"csrfmiddlewaretoken": browser.cookies["csrftoken"], "code": code}
    asked = browser.post(page, data=form, timeout=30)
    assert asked.status_code == 200 and "gpulab on " in asked.text, asked.text
    return browser.post(page, data={**form, "action": action}, timeout=30)


@pytest.mark.parametrize("action", ["confirm", "refuse", "confirmed-by-another"])
def test_login_through_the_browser_signs_in_with_the_code_the_user_types_or_ends_when_refused(
    web, config_home, alice, bob, action
):
    """With -u, a code someone else confirmed first (read off the student's screen) keeps nothing."""
    process = gpulab_process(config_home, "login", web.url, "--browser", "-u", "alice")
    shown = ""
    while "type this code:" not in shown:
        line = process.stderr.readline()
        assert line, f"gpulab ended without a code: {shown}"
        shown += line
    code = shown.split("type this code:")[1].split()[0]
    assert f"Open {web.url}/cli/login/ in the browser" in shown
    who, choice = (bob, "confirm") if action == "confirmed-by-another" else (alice, action)
    answer = confirm_in_browser(web, who, code, choice)
    assert answer.status_code == 200
    out, err = process.communicate(timeout=60)
    saved = config_home / "gpulab" / "profiles.json"
    if action == "confirm":
        assert process.returncode == 0, err
        assert f"Signed in to {web.url} as alice" in err and out == ""
        assert Token.objects.get(user=alice).key in saved.read_text()
    elif action == "refuse":
        assert process.returncode == 3 and "The sign-in was refused in the browser." in err
        assert not saved.exists() and not Token.objects.filter(user=alice).exists()
    else:
        assert process.returncode == 3 and "The code was confirmed by bob, not alice: nothing was kept." in err
        assert not saved.exists()


def test_a_wrong_password_exits_3_with_the_portal_s_words_and_keeps_nothing(gpulab, web, alice, config_home):
    result = gpulab("login", web.url, "-u", "alice", "--password-stdin", input="not-her-password\n")
    assert result.exit_code == 3
    assert "Unable to log in with provided credentials." in result.stderr and result.stdout == ""
    assert not (config_home / "gpulab" / "profiles.json").exists()


def test_commands_before_signing_in_say_how_and_exit_3(gpulab):
    result = gpulab("ps", "-o", "json")
    assert result.exit_code == 3 and "gpulab login URL" in result.stderr and result.stdout == ""


def test_ps_json_is_the_only_thing_on_stdout_even_with_warnings_on(gpulab, sign_in, config_home, alice, bob, make_job):
    sign_in(alice)
    mine = [make_job(alice, seconds=5), make_job(alice, seconds=6)]
    make_job(bob)
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(config_home),
        "PYTHONWARNINGS": "always",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "cli/src"), os.environ.get("PYTHONPATH", "")]),
    }
    for args in (
        ["ps", "-o", "json"],
        ["ps", "--state", "queued", "-o", "json"],
        ["status", str(mine[0].pk)[:8], "-o", "json"],
    ):
        done = subprocess.run(
            [sys.executable, "-X", "dev", "-m", "gpulab_cli", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        body = json.loads(done.stdout)  # the whole of stdout is one JSON document
        assert done.stdout.lstrip()[0] in "[{"
        if args[0] == "ps":
            assert [job["id"] for job in body] == [str(job.pk) for job in reversed(mine)]
        else:
            assert body["id"] == str(mine[0].pk) and body["params"]["seconds"] == 5


def test_another_student_gets_not_found_for_alice_s_job_by_id_or_prefix(gpulab, sign_in, alice, bob, make_job):
    job = make_job(alice)
    sign_in(bob)
    for args in (["status", str(job.pk)], ["logs", str(job.pk)], ["cancel", "--yes", str(job.pk)]):
        result = gpulab(*args)
        assert result.exit_code == 3, result.output
        assert "No such job." in result.stderr and result.stdout == ""
    prefix = gpulab("status", str(job.pk)[:8], "-o", "json")
    assert prefix.exit_code == 3 and "not found" in prefix.stderr and prefix.stdout == ""
    assert Job.objects.get(pk=job.pk).state == "queued"


def test_cancel_asks_first_and_a_second_cancel_is_refused_in_the_portal_s_words(gpulab, sign_in, alice, make_job):
    job = make_job(alice)
    sign_in(alice)
    not_started = gpulab("logs", str(job.pk)[:8])  # no log yet: nothing, at once, rather than a wait
    assert not_started.exit_code == 0 and not_started.stdout == ""
    declined = gpulab("cancel", str(job.pk)[:8], input="n\n")
    assert declined.exit_code == 1 and Job.objects.get(pk=job.pk).state == "queued"
    answers = as_json(gpulab("cancel", str(job.pk)[:8], "-o", "json", input="y\n"))
    assert answers[0]["state"] == "cancelled" and Job.objects.get(pk=job.pk).state == "cancelled"
    again = gpulab("cancel", "--yes", str(job.pk)[:8])
    assert again.exit_code == 3 and "This job already ended (Cancelled)." in again.stderr


def test_logout_revokes_the_token_on_the_portal_and_forgets_only_that_profile(
    gpulab, sign_in, config_home, alice, bob, cluster
):
    sign_in(alice)
    sign_in(bob, "--profile", "bob")
    listed = as_json(gpulab("profiles", "-o", "json"))
    assert [(p["name"], p["username"], p["default"]) for p in listed] == [
        ("bob", "bob", False),
        ("default", "alice", True),
    ]
    assert "token" not in json.dumps(listed)
    assert gpulab("logout").exit_code == 0
    assert not Token.objects.filter(user=alice).exists() and Token.objects.filter(user=bob).exists()
    assert gpulab("ps").exit_code == 0  # bob's profile is the default now
    assert as_json(gpulab("--profile", "bob", "ps", "-o", "json")) == []


def test_a_revoked_token_is_refused_with_a_hint_to_sign_in_again(gpulab, sign_in, alice, cluster):
    sign_in(alice)
    Token.objects.filter(user=alice).delete()
    result = gpulab("templates", "-o", "json")
    assert result.exit_code == 3 and "Invalid token." in result.stderr and "gpulab login URL" in result.stderr


def test_a_launch_the_portal_refuses_exits_3_with_the_field_s_message(gpulab, sign_in, alice, cluster, sleep_template):
    sign_in(alice)
    result = gpulab("launch", "sleep-echo", "-p", "seconds=9999")
    assert result.exit_code == 3 and result.stderr.startswith("Error: seconds: ") and result.stdout == ""
    assert not Job.objects.exists()


@pytest.fixture
def finished_job(cluster, services, alice, course, sleep_template):
    """Alice's ended job with its run directory on the cluster's login node, as the job's user left it."""
    cluster.lab_dir = LAB_DIR
    cluster.save()
    lab = Path(pwd.getpwnam(shared_user(services)).pw_dir) / LAB_DIR[2:]
    job = Job.objects.create(
        owner=alice, course=course, template=sleep_template, cluster=cluster, account=account_for(cluster, alice),
        script="echo", state="completed",
    )  # fmt: skip
    run_dir = lab / "jobs" / str(job.pk)
    run_dir.mkdir(parents=True)
    (run_dir / "output.log").write_text("epoch 1 loss 2.3\n")
    as_job_user(lab, services)
    yield job
    shutil.rmtree(lab, ignore_errors=True)


def test_files_put_then_get_round_trip_50_mb_and_each_goes_on_after_an_interruption(
    gpulab, sign_in, web, alice, finished_job, tmp_path
):
    sign_in(alice)
    short = str(finished_job.pk)[:8]
    data = os.urandom(50 * 10**6)
    source = tmp_path / "weights.bin"
    source.write_bytes(data)
    # An upload `files put` began, cut after its first piece: the portal keeps what arrived, and `files put` of the
    # same file goes on from there.
    uploads.started(web.url, str(finished_job.pk), "", "weights.bin", source)
    token = Token.objects.get(user=alice).key
    query = {"path": "", "name": "weights.bin", "size": len(data), "offset": 0}
    first = requests.put(
        f"{web.url}/api/v1/files/jobs/{finished_job.pk}/upload/", params=query, data=data[: 3 * 2**20],
        headers={"Authorization": f"Token {token}", "Content-Type": "application/octet-stream"}, timeout=60,
    )  # fmt: skip
    assert first.status_code == 200 and first.json()["received"] == 3 * 2**20
    put = gpulab("files", "put", short, str(source))
    assert put.exit_code == 0, put.output
    assert f"Going on from byte {3 * 2**20}" in put.stderr and put.stdout == ""
    listed = as_json(gpulab("files", "ls", short, "-o", "json"))
    sizes = {entry["name"]: entry["size"] for entry in listed["entries"]}
    assert sizes == {"output.log": 17, "weights.bin": len(data)}
    # A download cut after 10 MB: the part file stays, and `files get` asks for the rest only.
    target = tmp_path / "back" / "weights.bin"
    target.parent.mkdir()
    (entry,) = [entry for entry in listed["entries"] if entry["name"] == "weights.bin"]
    part = partial_path(target, str(finished_job.pk), "weights.bin", entry)
    part.write_bytes(data[: 10 * 10**6])
    got = gpulab("files", "get", short, "weights.bin", str(target.parent))
    assert got.exit_code == 0, got.output
    assert f"Going on from byte {10 * 10**6} of {len(data)}" in got.stderr
    assert hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(data).digest()
    assert not part.exists()
    # Another file's bytes of the same name are not joined to this one: a put of it starts over, and says so.
    (tmp_path / "other").mkdir()
    other = tmp_path / "other" / "weights.bin"
    other.write_bytes(data[:1000])
    first = requests.put(
        f"{web.url}/api/v1/files/jobs/{finished_job.pk}/upload/", params={**query, "size": 1000}, data=data[:10],
        headers={"Authorization": f"Token {token}", "Content-Type": "application/octet-stream"}, timeout=60,
    )  # fmt: skip
    assert first.status_code == 200 and first.json()["received"] == 10
    again = gpulab("files", "put", short, str(other))
    assert again.exit_code == 0 and "came from another file" in again.stderr, again.output


# -- On the local SLURM cluster, with the Celery worker (a lane of the node, like test_slurm_jobs.py) ---------------


def test_launch_then_logs_follow_then_wait_then_logs_ends_completed_with_exit_0(
    worker, gpulab, sign_in, alice, cluster, sleep_template
):
    sign_in(alice)
    launched = gpulab("launch", "sleep-echo", "-p", "seconds=3", "-p", "message=hello-from-the-cli", "-o", "json")
    job = as_json(launched)
    assert job["state"] == "queued" and job["cluster"] == "local" and "Launched job" in launched.stderr
    followed = gpulab("logs", "-f", "--interval", "0.5", job["id"][:8])
    assert followed.exit_code == 0, followed.output
    assert "hello-from-the-cli" in followed.stdout and "done" in followed.stdout
    waited = as_json(gpulab("wait", job["id"][:8], "--interval", "0.5", "-o", "json"))
    assert waited["state"] == "completed" and waited["exit_code"] == 0
    log = as_json(gpulab("logs", job["id"][:8], "-o", "json"))
    assert log["done"] is True and "hello-from-the-cli" in log["data"]


def test_a_failing_job_makes_launch_watch_and_wait_exit_4(worker, gpulab, sign_in, alice, cluster, sleep_template):
    sign_in(alice)
    watched = gpulab(
        "launch", "sleep-echo", "-p", "seconds=0", "-p", "exit_code=3", "--watch", "--interval", "0.5", "-o", "json"
    )
    assert watched.exit_code == 4, watched.output
    job = json.loads(watched.stdout)
    assert job["state"] == "failed" and job["exit_code"] == 3 and "failed" in watched.stderr
    waited = gpulab("wait", job["id"])
    assert waited.exit_code == 4 and "exit code 3" in waited.stderr and waited.stdout == ""


def test_shell_runs_what_is_piped_in_inside_the_running_job_and_ends_with_the_shell(
    worker, web, sign_in, config_home, alice, cluster, sleep_template, api_for, job_state
):
    sign_in(alice)
    job = job_state(launch(api_for, alice, gpus_per_node=1, seconds=240, time_minutes=5), "running")
    process = gpulab_process(config_home, "shell", str(job.pk)[:8])
    out, err = process.communicate('echo "shell-$((6*7)) in $GPULAB_JOB_ID"; exit\n', timeout=120)
    assert process.returncode == 0, err
    assert f"shell-42 in {job.pk}" in out


def test_a_terminal_socket_opened_with_a_token_is_that_token_s_user_and_no_one_else_s(
    worker, web, alice, bob, cluster, sleep_template, api_for, job_state
):
    """What `gpulab shell` opens, at the socket: alice's token opens her job's terminal, and the terminal closes when
    the token is revoked; bob's or an unknown token is refused as a missing job would be, also when the handshake
    carries alice's session cookie beside bob's token."""
    job = job_state(launch(api_for, alice, gpus_per_node=1, seconds=240, time_minutes=5), "running")
    url = web.url.replace("http://", "ws://") + f"/ws/jobs/{job.pk}/terminal/?cols=80&rows=24"

    def opened(token: str, cookie: str = ""):
        headers = {"Authorization": f"Token {token}", "Origin": web.url}
        return connect(url, additional_headers=headers | ({"Cookie": cookie} if cookie else {}), open_timeout=15)

    with opened(Token.objects.get_or_create(user=alice)[0].key) as socket:
        socket.send(b"echo token-$((6*7))\n")
        output = ""
        while "token-42" not in output:
            frame = socket.recv(timeout=30)
            output += frame.decode(errors="replace") if isinstance(frame, bytes) else ""
        Token.objects.filter(user=alice).delete()  # gpulab logout, or "Replace token" on the profile page
        closed = ""
        while not closed:
            frame = socket.recv(timeout=30)
            closed = json.loads(frame).get("closed", "") if isinstance(frame, str) else ""
        assert closed.startswith("Your sign-in ended")
    bob_token = Token.objects.get_or_create(user=bob)[0].key
    for token, cookie in ((bob_token, ""), ("0" * 40, ""), (bob_token, f"sessionid={session_cookie(alice)}")):
        with pytest.raises(InvalidStatus) as refused:
            opened(token, cookie)
        assert refused.value.response.status_code == 403


def test_course_jobs_dashboard_and_roster_for_the_instructor_and_a_refusal_for_a_student(
    gpulab, sign_in, alice, bob, instructor, make_job, course
):
    mine = [make_job(alice, seconds=5), make_job(bob, seconds=6)]
    sign_in(instructor)
    listed = as_json(gpulab("course", "jobs", course.slug, "-o", "json"))
    assert sorted(job["id"] for job in listed) == sorted(str(job.pk) for job in mine)
    board = as_json(gpulab("course", "dashboard", course.slug, "-o", "json"))
    assert {row["username"]: row["jobs"] for row in board["students"]} == {"alice": 1, "bob": 1}
    people = as_json(gpulab("course", "roster", course.slug, "-o", "json"))
    assert {person["username"]: person["role"] for person in people}["ines"] == "instructor"
    shown = gpulab("course", "roster", course.slug)
    assert shown.exit_code == 0 and "alice" in shown.stdout and "instructor" in shown.stdout

    sign_in(alice)
    refused = gpulab("course", "roster", course.slug, "-o", "json")
    assert refused.exit_code == 3 and refused.stdout == "" and "No such course" in refused.stderr


def test_compare_shows_what_differs_and_another_student_is_told_not_found(gpulab, sign_in, alice, bob, make_job):
    first, second = make_job(alice, seconds=5), make_job(alice, seconds=9)
    sign_in(alice)
    answer = as_json(gpulab("compare", str(first.pk)[:8], str(second.pk)[:8], "-o", "json"))
    assert [run["id"] for run in answer["runs"]] == [str(first.pk), str(second.pk)]
    assert [p["name"] for p in answer["parameters"] if p["differs"]] == ["seconds"] and "figures" not in answer
    shown = gpulab("compare", str(first.pk)[:8], str(second.pk)[:8])
    assert shown.exit_code == 0 and "seconds=5" in shown.stdout and "seconds=9" in shown.stdout

    sign_in(bob)
    refused = gpulab("compare", str(first.pk), str(second.pk), "-o", "json")
    assert refused.exit_code == 3 and refused.stdout == ""


def test_a_sweep_from_the_command_line_runs_each_value_and_a_parameter_not_sweepable_is_refused(
    worker, gpulab, sign_in, alice, cluster, sleep_template
):
    sign_in(alice)
    made = as_json(gpulab("sweep", "sleep-echo", "-s", "seconds=1,2", "-p", "message=from-a-sweep", "-o", "json"))
    assert [run["params"]["seconds"] for run in made["runs"]] == [1, 2] and made["mode"] == "grid"
    for run in made["runs"]:
        waited = as_json(gpulab("wait", run["id"][:8], "--interval", "0.5", "-o", "json"))
        assert waited["state"] == "completed"
        assert "from-a-sweep" in as_json(gpulab("logs", run["id"][:8], "-o", "json"))["data"]

    refused = gpulab("sweep", "sleep-echo", "-s", "message=a,b", "-o", "json")
    assert refused.exit_code == 3 and refused.stdout == "" and "message" in refused.stderr
