"""The file browser on the local SLURM's login node, over SFTP through sshd, as the cluster's shared user (reached
through the service account's sudo rule, as jobs are; each student confined to their own folder): uploads in chunks
that resume, downloads with ranges and archives, the refusals that keep a student inside their space (`..`, absolute
paths, symlinks leading out, devices, control characters), and another student's job files answering 404 on pages
and API; in Chromium (at laptop and phone widths), an upload in chunks with its progress bar, a new folder, a text
file read, and the job page's run directory with download links. Screenshots go to $GPULAB_SCREENSHOT_DIR (default
/tmp/gpulab-shots)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tarfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from urllib.parse import urlencode, urlsplit
from zoneinfo import ZoneInfo

import pytest
import requests
from django.test import override_settings
from django.urls import reverse
from playwright.sync_api import expect

from clusters.backends import openssh
from jobs.models import Job
from sessions.files import OPENSSH_FROM_BYTES

from .conftest import WORKER_SUFFIX, start_web, wait_for
from .test_browser import log_in
from .test_job_page_browser import SHOTS, WIDTHS, _no_horizontal_scroll, _page
from .ws import session_cookie

# Each test process its own: students' folders are named by user id, which the processes' databases repeat, and a
# test's teardown removes the whole directory.
LAB_DIR = "~/gpulab-files-test" + WORKER_SUFFIX
# The download checks find the login node's OpenSSH readers by process: they run with the node group's tests.
pytestmark = pytest.mark.slurm_node


def shared_user(services) -> str:
    """The one user every student's jobs and files are on this cluster (the shared mode), never the service account."""
    return services.get("GPULAB_SHARED_USER", "labshared")


@pytest.fixture
def lab(cluster, services):
    cluster.lab_dir = LAB_DIR
    cluster.save()
    home = Path(pwd.getpwnam(shared_user(services)).pw_dir)
    yield home / LAB_DIR[2:]
    shutil.rmtree(home / LAB_DIR[2:], ignore_errors=True)


def space_of(lab: Path, user) -> Path:
    return lab / "students" / f"user-{user.pk}"


def as_job_user(path: Path, services) -> None:
    """What the test wrote as root, handed to the user students' jobs run as."""
    entry = pwd.getpwnam(shared_user(services))
    for root, dirs, files in os.walk(path):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            os.lchown(name, entry.pw_uid, entry.pw_gid)


def upload(client, base: str, name: str, data: bytes, *, chunk: int, path: str = "", start: int = 0):
    offset = start
    while True:
        query = f"?path={path}&name={name}&size={len(data)}&offset={offset}"
        response = client.put(
            base + "upload/" + query, data[offset : offset + chunk], content_type="application/octet-stream"
        )
        assert response.status_code == 200, response.content
        offset = response.json()["received"]
        if response.json()["complete"]:
            return response


def body(response) -> bytes:
    """A streamed answer, read whole (the test client runs the async stream to its end)."""
    return b"".join(response)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def readers_of(path: Path) -> list[tuple[int, str, str]]:
    """(pid, user, command line) of each process on this machine (portal and login node both) that names `path`."""
    table = subprocess.run(["ps", "-ww", "-eo", "pid=,user:32=,args="], capture_output=True, text=True, check=True)
    found = []
    for line in table.stdout.splitlines():
        if str(path) in line:
            pid, user, command = line.split(None, 2)
            found.append((int(pid), user, command))
    return found


def check_large_download(web, user, url: str, data: bytes, target: Path, reader: str) -> None:
    """A download big enough for OpenSSH, from the running web server as `user`'s browser: `dd` reads `target` on the
    login node as the cluster user `reader` while it streams; whole, ranged, cut short on the cluster (the rest comes
    by SFTP), abandoned by the browser, and asked for with HEAD (nothing read)."""
    headers = {"Cookie": f"sessionid={session_cookie(user)}"}
    with requests.get(web.url + url, headers=headers, stream=True, timeout=30) as response:
        assert response.status_code == 200 and response.headers["Content-Length"] == str(len(data))
        chunks = response.iter_content(1 << 16)
        digest = hashlib.sha256(next(chunks))  # the rest is still on its way: the pipes hold far less than the file
        readers = readers_of(target)
        assert [who for _, who, command in readers if command.startswith("dd ")] == [reader], readers
        assert any(command.startswith("ssh ") for _, _, command in readers), readers  # the portal's OpenSSH client
        for chunk in chunks:
            digest.update(chunk)
    assert digest.hexdigest() == sha256(data)

    ranged = requests.get(web.url + url, headers={**headers, "Range": "bytes=1000-"}, timeout=30)  # a resumed one
    assert ranged.status_code == 206 and ranged.headers["Content-Range"] == f"bytes 1000-{len(data) - 1}/{len(data)}"
    assert sha256(ranged.content) == sha256(data[1000:])

    with requests.get(web.url + url, headers=headers, stream=True, timeout=30) as cut:
        chunks = cut.iter_content(1 << 16)
        digest = hashlib.sha256(next(chunks))
        for pid, _, command in readers_of(target):
            if command.startswith("dd "):
                os.kill(pid, signal.SIGKILL)  # the login node stops dd part way: ssh fails, SFTP goes on from there
        for chunk in chunks:
            digest.update(chunk)
    assert digest.hexdigest() == sha256(data)

    with requests.get(web.url + url, headers=headers, stream=True, timeout=30) as left:
        next(left.iter_content(1 << 16))  # the browser goes away after the first bytes
    wait_for(lambda: not readers_of(target), timeout=15, what="ssh and dd to stop with the abandoned download")

    head = requests.head(web.url + url, headers=headers, timeout=30)
    assert head.status_code == 200 and head.headers["Content-Length"] == str(len(data)) and not head.content
    seen, deadline = [], time.monotonic() + 2
    while time.monotonic() < deadline and not seen:  # a whole read would show dd for a good part of a second
        seen = readers_of(target)
        time.sleep(0.05)
    assert not seen, seen


def test_a_student_uploads_in_resumed_chunks_lists_views_downloads_ranges_and_archives(
    lab, cluster, alice, api_for, services
):
    client = api_for(alice)
    base = reverse("api:files-cluster", args=[cluster.pk])
    data = os.urandom(3 * 2**20 + 12345)

    assert client.post(base + "mkdir/", {"path": "", "name": "data"}, format="json").status_code == 201
    # The first chunk arrives, then the connection "drops": the server says where to resume.
    first = client.put(
        base + f"upload/?path=data&name=train.bin&size={len(data)}&offset=0",
        data[: 2**20],
        content_type="application/octet-stream",
    )
    assert first.json() == {"name": "train.bin", "received": 2**20, "size": len(data), "complete": False}
    assert client.get(base + "upload/?path=data&name=train.bin").json()["received"] == 2**20
    assert [e["name"] for e in client.get(base + "?path=data").json()["entries"]] == []  # not there until whole
    upload(client, base, "train.bin", data, chunk=2**20, path="data", start=2**20)

    on_disk = space_of(lab, alice) / "data" / "train.bin"
    assert hashlib.sha256(on_disk.read_bytes()).hexdigest() == hashlib.sha256(data).hexdigest()
    entries = client.get(base + "?path=data").json()["entries"]
    assert [(e["name"], e["kind"], e["size"]) for e in entries] == [("train.bin", "file", len(data))]

    whole = client.get(base + "download/?path=data/train.bin")
    assert whole.status_code == 200 and whole["Content-Length"] == str(len(data))
    assert body(whole) == data
    part = client.get(base + "download/?path=data/train.bin", HTTP_RANGE="bytes=1000-1999")
    assert part.status_code == 206 and part["Content-Range"] == f"bytes 1000-1999/{len(data)}"
    assert body(part) == data[1000:2000]
    assert client.get(base + "download/?path=data/train.bin", HTTP_RANGE=f"bytes={len(data)}-").status_code == 416

    (space_of(lab, alice) / "data" / "notes.txt").write_text("".join(f"line {i}\n" for i in range(100000)))
    as_job_user(space_of(lab, alice), services)
    text = client.get(base + "text/?path=data/notes.txt&tail=1").json()
    assert text["cut"] and text["text"].endswith("line 99999\n")

    archive = zipfile.ZipFile(io.BytesIO(body(client.get(base + "download/?path=data&archive=zip"))))
    assert archive.read("data/train.bin") == data
    with tarfile.open(fileobj=io.BytesIO(body(client.get(base + "download/?path=data&archive=tar")))) as tar:
        assert tar.extractfile("data/train.bin").read() == data

    assert client.post(base + "rename/", {"path": "data/train.bin", "name": "train-v2.bin"}, format="json").json() == {
        "path": "data/train-v2.bin"
    }
    assert client.post(base + "delete/", {"path": "data"}, format="json").status_code == 204
    assert not (space_of(lab, alice) / "data").exists()


def test_a_large_file_is_read_through_openssh_as_the_shared_user_and_stops_when_the_browser_leaves(
    lab, web, cluster, alice, api_for, services
):
    client, base = api_for(alice), reverse("api:files-cluster", args=[cluster.pk])
    assert client.get(base).status_code == 200  # alice's folder, made on first use
    name = "model weights; $(touch pwned).bin"  # quoted for the login node's shell, never run by it
    data = os.urandom(OPENSSH_FROM_BYTES + 4321)
    target = space_of(lab, alice) / name
    target.write_bytes(data)
    as_job_user(lab, services)
    url = base + "download/?" + urlencode({"path": name})
    check_large_download(web, alice, url, data, target, shared_user(services))
    assert not (lab.parent / "pwned").exists() and not (space_of(lab, alice) / "pwned").exists()

    # With every OpenSSH slot taken, the same download comes over the pooled SFTP connection, as whole.
    def no_openssh(*args, **kwargs):
        raise AssertionError("OpenSSH was started with no slot free")

    with override_settings(GPULAB_FILES_OPENSSH_DOWNLOADS=0), pytest.MonkeyPatch.context() as patch:
        patch.setattr(openssh, "output", no_openssh)
        assert sha256(body(client.get(url))) == sha256(data)


def test_traversal_absolute_paths_symlinks_leading_out_devices_and_control_characters_are_refused(
    lab, cluster, alice, bob, api_for, services
):
    alice_client, base = api_for(alice), reverse("api:files-cluster", args=[cluster.pk])
    api_for(bob).get(base)  # bob's folder exists, beside alice's
    assert alice_client.get(base).status_code == 200
    mine, bobs = space_of(lab, alice), space_of(lab, bob)
    (bobs / "secret.txt").write_text("bob's answers")
    (mine / "inside").mkdir()
    (mine / "inside" / "ok.txt").write_text("fine")
    (mine / "etc").symlink_to("/etc")
    (mine / "passwd").symlink_to("/etc/passwd")
    (mine / "to-bob").symlink_to(f"../user-{bob.pk}/secret.txt")
    (mine / "shortcut").symlink_to("inside")  # a link that stays inside works
    subprocess.run(["mknod", str(mine / "null"), "c", "1", "3"], check=True)
    as_job_user(lab, services)

    refused = {
        "../" + f"user-{bob.pk}/secret.txt": "..",
        "inside/../../" + f"user-{bob.pk}/secret.txt": "..",
        "/etc/passwd": "/",
        "~/.ssh/id_ed25519": "~",
        "etc/passwd": "outside",
        "passwd": "outside",
        "to-bob": "outside",
        "null": "not a regular file",
        "inside/ok\x1b[31m.txt": "control characters",
    }
    for path, why in refused.items():
        for endpoint in ("download/", "text/"):
            response = alice_client.get(base + endpoint, {"path": path})
            assert response.status_code == 400, (path, response.content)
            assert why in response.json()["detail"], (path, response.json())
    assert alice_client.get(base, {"path": "etc"}).status_code == 400
    bad_names = ["../escape", "a/b", "x\ny", ".."]
    for name in bad_names:
        assert alice_client.post(base + "mkdir/", {"path": "", "name": name}, format="json").status_code == 400
        response = alice_client.post(base + "rename/", {"path": "inside/ok.txt", "name": name}, format="json")
        assert response.status_code == 400
    upload = alice_client.put(
        base + "upload/?path=etc&name=evil&size=4&offset=0", b"evil", content_type="application/octet-stream"
    )
    assert upload.status_code == 400 and not Path("/etc/evil").exists()

    listed = {e["name"]: e["kind"] for e in alice_client.get(base).json()["entries"]}
    assert listed == {
        "etc": "link-out", "passwd": "link-out", "to-bob": "link-out", "null": "other", "inside": "dir",
        "shortcut": "dir",
    }  # fmt: skip
    assert body(alice_client.get(base + "download/", {"path": "shortcut/ok.txt"})) == b"fine"
    # Deleting a link removes the link, never what it points to.
    assert alice_client.post(base + "delete/", {"path": "to-bob"}, format="json").status_code == 204
    assert (bobs / "secret.txt").read_text() == "bob's answers"


def test_a_hard_link_to_another_student_s_file_is_listed_but_never_read_and_direction_controls_are_written_out(
    lab, cluster, alice, bob, api_for, services
):
    """OpenSSH's sftp-server gives each listed entry's link count in its ls -l line; the portal reads no file with
    more than one name (download, view, archive) and says why; a name a job wrote with U+202E shows as \\u202e."""
    alice_client, base = api_for(alice), reverse("api:files-cluster", args=[cluster.pk])
    api_for(bob).get(base)
    assert alice_client.get(base).status_code == 200
    mine, bobs = space_of(lab, alice), space_of(lab, bob)
    (bobs / "secret.txt").write_text("bob's answers")
    (mine / "work").mkdir()
    (mine / "work" / "mine.txt").write_text("my own")
    os.link(bobs / "secret.txt", mine / "work" / "answers.txt")
    (mine / "invoice\u202etxt.exe").write_text("x")
    as_job_user(lab, services)

    for endpoint in ("download/", "text/"):
        response = alice_client.get(base + endpoint, {"path": "work/answers.txt"})
        assert response.status_code == 400 and "hard link" in response.json()["detail"], response.content
    listed = {e["name"]: e["kind"] for e in alice_client.get(base, {"path": "work"}).json()["entries"]}
    assert listed == {"answers.txt": "linked", "mine.txt": "file"}
    zipped = zipfile.ZipFile(io.BytesIO(body(alice_client.get(base + "download/", {"path": "work", "archive": "zip"}))))
    assert sorted(zipped.namelist()) == ["work/LEFT-OUT.txt", "work/mine.txt"]
    assert b"bob's answers" not in b"".join(zipped.read(n) for n in zipped.namelist())

    shown = {e["name"]: e["shown"] for e in alice_client.get(base).json()["entries"]}
    assert shown["invoice\u202etxt.exe"] == "invoice\\u202etxt.exe"
    renamed = alice_client.post(base + "rename/", {"path": "work/mine.txt", "name": "a\u202eb"}, format="json")
    assert renamed.status_code == 400 and "direction controls" in renamed.json()["detail"]


def test_with_the_student_s_own_cluster_account_files_are_read_and_written_as_that_account(
    cluster, alice, api_for, services
):
    from clusters.choices import RunAs
    from clusters.models import AuthMethod, ClusterAccount

    cluster.lab_dir, cluster.run_as = LAB_DIR, RunAs.OWN_ACCOUNT
    cluster.save()
    own = ClusterAccount(
        cluster=cluster, user=alice, username=services["GPULAB_PERSONAL_USER"], auth_method=AuthMethod.KEY
    )
    own.set_secret(Path(services["GPULAB_PERSONAL_KEY"]).read_text())
    own.save()
    home = Path(pwd.getpwnam(own.username).pw_dir)
    lab = home / LAB_DIR[2:]
    try:
        client, base = api_for(alice), reverse("api:files-cluster", args=[cluster.pk])
        upload(client, base, "data.txt", b"hello from alice\n", chunk=1024)
        written = lab / "data.txt"  # the lab directory in the account's own home (made on first use), as that account
        assert written.read_bytes() == b"hello from alice\n"
        assert written.stat().st_uid == pwd.getpwnam(own.username).pw_uid
        assert client.get(base + "text/", {"path": "data.txt"}).json()["text"] == "hello from alice\n"
    finally:
        shutil.rmtree(lab, ignore_errors=True)


@pytest.fixture
def alice_job(lab, cluster, alice, course, services):
    from jobs.models import JobTemplate

    template = JobTemplate.objects.create(name="Train", slug="train", body="echo", status="published")
    from clusters.identity import account_for

    job = Job.objects.create(
        owner=alice, course=course, template=template, cluster=cluster, account=account_for(cluster, alice),
        script="echo", state="completed",
    )  # fmt: skip
    run_dir = lab / "jobs" / str(job.pk)
    run_dir.mkdir(parents=True)
    (run_dir / "model.pt").write_bytes(b"weights" * 1000)
    (run_dir / "output.log").write_text("epoch 1 loss 2.3\n")
    as_job_user(lab, services)
    return job


def test_another_student_gets_404_on_every_page_and_endpoint_of_a_job_s_files(alice_job, alice, bob, api_for, client):
    api_base = reverse("api:files-job", args=[alice_job.pk])
    pages = [
        reverse("sessions:job_files", args=[alice_job.pk]),
        reverse("sessions:job_files", args=[alice_job.pk]) + "?file=model.pt",
        reverse("sessions:job_artefacts", args=[alice_job.pk]),
    ]
    reads = [api_base, api_base + "download/?path=model.pt", api_base + "text/?path=output.log",
             api_base + "download/?path=&archive=zip", api_base + "upload/?path=&name=x"]  # fmt: skip
    changes = [
        ("mkdir/", {"name": "x"}),
        ("rename/", {"path": "model.pt", "name": "m.pt"}),
        ("delete/", {"path": "model.pt"}),
    ]

    for url in pages:
        assert client.get(url).status_code == 302  # anonymous: to the login page
    for url in reads:
        assert client.get(url).status_code in (401, 403)

    client.force_login(bob)
    bob_api = api_for(bob)
    for url in pages:
        assert client.get(url).status_code == 404, url
    for url in reads:
        assert bob_api.get(url).status_code == 404, url
    for endpoint, data in changes:
        assert bob_api.post(api_base + endpoint, data, format="json").status_code == 404
    chunk = bob_api.put(api_base + "upload/?name=x&size=1&offset=0", b"x", content_type="application/octet-stream")
    assert chunk.status_code == 404

    client.force_login(alice)
    page = client.get(pages[2]).content.decode()
    assert "model.pt" in page and "output.log" in page
    assert body(api_for(alice).get(api_base + "download/?path=model.pt")) == b"weights" * 1000


@pytest.mark.browser
@pytest.mark.timeout(120)
@pytest.mark.parametrize("size", WIDTHS)
def test_a_student_uploads_in_chunks_makes_a_folder_and_reads_a_file_in_the_browser(
    chromium, live_server, lab, cluster, alice, services, settings, size
):
    settings.GPULAB_FILES_CHUNK_BYTES = 64 * 1024  # the 300 KB file goes up in five chunks
    data = os.urandom(300_000)
    page = _page(chromium, size, timezone_id="America/New_York", locale="en-US")
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/files/")
    page.get_by_role("link", name="Local SLURM").click()
    expect(page.get_by_text("This folder is empty.")).to_be_visible()

    page.set_input_files(
        "#upload-input", files=[{"name": "train.bin", "mimeType": "application/octet-stream", "buffer": data}]
    )
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.locator("table.files")).to_contain_text("train.bin", timeout=30_000)
    on_cluster = space_of(lab, alice) / "train.bin"
    assert hashlib.sha256(on_cluster.read_bytes()).digest() == hashlib.sha256(data).digest()

    page.fill("#mkdir-name", "runs")
    page.get_by_role("button", name="Make folder").click()
    expect(page.locator("table.files")).to_contain_text("runs/")
    (space_of(lab, alice) / "notes.txt").write_text("lr=3e-4\nbatch=32\n")
    as_job_user(lab, services)
    page.reload()
    # "Changed" in the viewer's zone, as on the job page; the server's text was the portal's zone (UTC).
    changed = page.locator("table.files tr", has_text="notes.txt").locator("time[data-local-time=short]")
    expect(changed).to_have_attribute("title", "Your time zone: America/New_York")
    written = datetime.fromtimestamp((space_of(lab, alice) / "notes.txt").stat().st_mtime, ZoneInfo("America/New_York"))
    expect(changed).to_contain_text(written.strftime("%I:%M %p"))
    expect(changed).not_to_contain_text("UTC")
    _no_horizontal_scroll(page)
    page.screenshot(path=str(SHOTS / f"files-browser-{size}.png"), full_page=True)

    page.get_by_role("link", name="notes.txt").click()
    expect(page.locator("pre.file-text")).to_have_text("lr=3e-4\nbatch=32\n")
    _no_horizontal_scroll(page)
    page.screenshot(path=str(SHOTS / f"files-text-{size}.png"), full_page=True)


@pytest.mark.browser
@pytest.mark.timeout(120)
@pytest.mark.parametrize("size", WIDTHS)
def test_the_job_page_lists_its_run_directory_with_download_links(chromium, live_server, alice_job, alice, size):
    page = _page(chromium, size)
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}{alice_job.get_absolute_url()}")
    card = page.locator("#artefacts")
    expect(card.get_by_role("link", name="model.pt")).to_be_visible(timeout=20_000)
    with page.expect_download() as download:
        card.get_by_role("link", name="model.pt").click()
    assert download.value.suggested_filename == "model.pt"
    assert Path(download.value.path()).read_bytes() == b"weights" * 1000
    card.scroll_into_view_if_needed()
    _no_horizontal_scroll(page)
    card.screenshot(path=str(SHOTS / f"job-artefacts-{size}.png"))


@pytest.fixture
def pending_job(lab, cluster, alice, course):
    """alice's job that waits in the queue: its run directory does not exist yet."""
    from clusters.identity import account_for
    from jobs.models import JobTemplate

    template = JobTemplate.objects.create(name="Train", slug="train", body="echo", status="published")
    return Job.objects.create(
        owner=alice, course=course, template=template, cluster=cluster, account=account_for(cluster, alice),
        script="echo", state="pending",
    )  # fmt: skip


def test_a_run_directory_not_made_yet_is_an_empty_state_on_the_job_page_and_a_404_with_words_elsewhere(
    lab, pending_job, alice, api_for, client, services
):
    job = pending_job
    (lab / "jobs").mkdir(parents=True, exist_ok=True)
    as_job_user(lab, services)
    client.force_login(alice)

    card = client.get(reverse("sessions:job_artefacts", args=[job.pk]))
    assert card.status_code == 200
    assert "The run directory appears when the job starts" in card.content.decode()

    browser = client.get(reverse("sessions:job_files", args=[job.pk]))
    assert browser.status_code == 404 and "appears when the job starts" in browser.content.decode()

    api_base = reverse("api:files-job", args=[job.pk])
    for url in (api_base, api_base + "download/?path=model.pt", api_base + "text/?path=output.log"):
        answer = api_for(alice).get(url)
        assert answer.status_code == 404, url
        assert answer.json()["detail"], url

    # Inside a directory that exists, a missing name is a 404 with words too (not a 500 from SFTP's stat).
    (lab / "jobs" / str(job.pk)).mkdir()
    as_job_user(lab, services)
    missing = client.get(reverse("sessions:job_files", args=[job.pk]) + "?file=model.pt")
    assert missing.status_code == 404 and "There is no such file or folder here" in missing.content.decode()
    assert api_for(alice).get(api_base + "download/?path=model.pt").status_code == 404


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_the_run_directory_card_says_when_it_appears_and_lists_it_once_the_job_starts(
    chromium, live_server, lab, pending_job, alice, services
):
    job = pending_job
    page = _page(chromium, "phone")
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}{job.get_absolute_url()}")
    card = page.locator("#artefacts")
    expect(card).to_contain_text("The run directory appears when the job starts", timeout=20_000)
    expect(card.get_by_role("link", name="Open it in the file browser")).to_have_count(0)  # nothing to open yet
    _no_horizontal_scroll(page)
    card.screenshot(path=str(SHOTS / "job-artefacts-pending-phone.png"))

    run_dir = lab / "jobs" / str(job.pk)
    run_dir.mkdir(parents=True)
    (run_dir / "model.pt").write_bytes(b"weights")
    as_job_user(lab, services)
    Job.objects.filter(pk=job.pk).update(state="running")
    expect(card.get_by_role("link", name="model.pt")).to_be_visible(timeout=20_000)


def _abort_after_first_bytes(web, cookie: str, url: str, patience: float = 5.0) -> int:
    """GET `url` as a browser would, then leave: once some of the body arrived (or after `patience` seconds), close
    the connection. The body bytes that arrived."""
    return _leave_early(web, cookie, url, patience)[1]


def _abort_once_streaming(web, cookie: str, url: str, refused: list[bytes]) -> int:
    """As a download manager would: asked again while the portal refuses it for the user's other archives under way
    (429, kept in `refused`), then left after its first bytes. The body bytes that arrived."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        status, received, body = _leave_early(web, cookie, url, 30)
        if status != 429:
            return received
        refused.append(body)
        time.sleep(0.3)
    raise AssertionError("the archive was refused for four minutes: a left download kept its slot")


def _leave_early(web, cookie: str, url: str, patience: float) -> tuple[int, int, bytes]:
    """(status, body bytes that arrived, the body itself) of a GET left once some of its body arrived."""
    parts = urlsplit(web.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=patience) as sock:
        sock.sendall(f"GET {url} HTTP/1.1\r\nHost: {parts.netloc}\r\nCookie: sessionid={cookie}\r\n\r\n".encode())
        received, deadline = b"", time.monotonic() + patience
        with contextlib.suppress(TimeoutError, OSError):
            while time.monotonic() < deadline:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
                _, _, rest = received.partition(b"\r\n\r\n")
                if rest:
                    break
        head, _, body = received.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
        return status, len(body), body


def _sftp_servers(user: str) -> int:
    table = subprocess.run(["ps", "-eo", "user:32=,args="], capture_output=True, text=True, check=True).stdout
    return sum(1 for line in table.splitlines() if line.split(None, 1)[0] == user and "sftp-server" in line)


class PageWatch:
    """Another user's pages, asked one after another while something else runs: each answer's status and time, beside
    the same pages' usual time on this machine, measured just before (three rounds, nothing else running)."""

    PAGES = ("/jobs/", "/files/", "/")

    def __init__(self, web, user):
        self.web, self.http = web, requests.Session()
        self.http.cookies.set("sessionid", session_cookie(user))
        self.answers: list[tuple[str, int, float]] = []
        self.usual = 0.0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _ask(self, page: str) -> tuple[str, int, float]:
        started = time.monotonic()
        try:
            status = self.http.get(self.web.url + page, timeout=60).status_code
        except requests.RequestException:
            status = 0
        return page, status, time.monotonic() - started

    def _run(self) -> None:
        for page in itertools.cycle(self.PAGES):
            if self.done.is_set():
                return
            self.answers.append(self._ask(page))
            time.sleep(0.1)

    def __enter__(self) -> PageWatch:
        self.usual = max(self._ask(page)[2] for page in self.PAGES * 3)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join(timeout=90)

    def slow_or_failed(self) -> list[tuple[str, int, float]]:
        """The answers that failed, or took longer than the pages usually take here (four times the slowest usual
        answer, and at least 2 s: a busy test machine's own jitter is not a stall)."""
        within = max(2.0, 4 * self.usual)
        return [(page, status, round(took, 2)) for page, status, took in self.answers if status >= 500 or status == 0
                or took >= within]  # fmt: skip


def _clean_log(text: str) -> list[str]:
    """Lines of a web server's log that say something went wrong."""
    bad = ("generator already executing", "Traceback", "PoolTimeout", " ERROR ", "Exception in ASGI application")
    return [line for line in text.splitlines() if any(word in line for word in bad)]


@pytest.mark.timeout(900)
def test_twenty_aborted_zip_downloads_of_a_20000_entry_tree_leave_other_users_pages_answering(
    alice_job, lab, alice, bob, portal_env, services, tmp_path
):
    """The incident, streamed: a 20,000-entry tree (100 folders of 199 empty files) in alice's run directory, on a web
    server with a pool of 4 database connections and the archive limit raised so that the tree streams. Twenty
    downloads of it as a zip are asked at once: two stream at a time (GPULAB_FILES_ARCHIVES_PER_USER), the others are
    refused in words until a slot is free, and each is left after its first bytes, so every slot a left download held
    comes back. Meanwhile bob's pages answer within their usual time and none with a 5xx; no download holds a
    connection of the pool; the web server logs no error (no `generator already executing`); every SFTP channel the
    downloads opened is closed soon after."""
    tree = lab / "jobs" / str(alice_job.pk) / "tree"
    for folder in range(100):
        (tree / f"f{folder:03}").mkdir(parents=True)
        for name in range(199):
            (tree / f"f{folder:03}" / f"e{name:03}.txt").touch()
    as_job_user(lab, services)
    env = {**portal_env, "DATABASE_POOL_SIZE": "4", "FILES_ARCHIVE_MAX_ENTRIES": "25000"}
    web = start_web(env, tmp_path / "web.log")
    try:
        job_user = shared_user(services)  # the downloads' SFTP servers run as the job's user, through the sudo rule
        baseline = _sftp_servers(job_user)
        cookie = session_cookie(alice)
        url = (
            reverse("api:files-job", args=[alice_job.pk]) + "download/?" + urlencode({"path": "tree", "archive": "zip"})
        )
        refused: list[bytes] = []
        with PageWatch(web, bob) as watch, ThreadPoolExecutor(20) as browsers:
            received = list(browsers.map(lambda _: _abort_once_streaming(web, cookie, url, refused), range(20)))
            time.sleep(3)  # bob keeps asking while the abandoned downloads wind down
        assert all(received), received  # every download had started to stream when it was left
        assert refused and all(b"2 folder downloads under way; wait for one to finish" in body for body in refused)
        assert watch.answers and not watch.slow_or_failed(), watch.slow_or_failed()
        wait_for(lambda: _sftp_servers(job_user) <= baseline, timeout=60, what="the downloads' SFTP channels to close")
        finished = requests.get(web.url + url, cookies={"sessionid": cookie}, timeout=300)
        assert finished.status_code == 200 and len(zipfile.ZipFile(io.BytesIO(finished.content)).namelist()) == 19_900
    finally:
        web.stop()
    assert not _clean_log(web.logs()), _clean_log(web.logs())


@pytest.mark.timeout(300)
def test_a_folder_of_20000_empty_folders_is_refused_in_words_and_aborted_downloads_of_it_stall_nothing(
    alice_job, lab, alice, bob, web, services
):
    """The incident as it was found: a run-directory folder holding 20,000 empty folders. Its archive is refused
    before anything streams (more than FILES_ARCHIVE_MAX_ENTRIES, 10,000); of twenty downloads of it asked at once
    and left, two walk the folder and the rest are refused at once, so they stall no one; the web server logs no
    error."""
    many = lab / "jobs" / str(alice_job.pk) / "many"
    for n in range(20_000):
        (many / f"d{n:05}").mkdir(parents=True)
    as_job_user(lab, services)
    log_before = len(web.logs())
    cookie = session_cookie(alice)
    url = reverse("api:files-job", args=[alice_job.pk]) + "download/?" + urlencode({"path": "many", "archive": "zip"})
    with PageWatch(web, bob) as watch, ThreadPoolExecutor(20) as browsers:
        list(browsers.map(lambda _: _abort_after_first_bytes(web, cookie, url, 0.2), range(20)))
        time.sleep(3)
    assert watch.answers and not watch.slow_or_failed(), watch.slow_or_failed()
    answer = wait_for(  # the left requests' walks end at the limit and give their slots back
        lambda: (got := requests.get(web.url + url, cookies={"sessionid": cookie}, timeout=60)).status_code != 429
        and [got],  # a list: a 409 response is falsy itself
        timeout=120,
        interval=1,
        what="a free archive slot",
    )[0]
    assert answer.status_code == 409
    assert answer.json()["detail"] == (
        "This folder holds more than 10,000 entries; download a smaller folder or use the terminal."
    )
    assert not _clean_log(web.logs()[log_before:]), _clean_log(web.logs()[log_before:])
