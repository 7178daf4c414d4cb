"""The file browser's rules that need no cluster: path cleaning, HTTP ranges, who reaches which space, clusters
where files are not available (Kubernetes), and a Session's refusals over a local folder (tests/local_sftp.py: hard
links, names with Unicode direction controls). The real SFTP side is tests/integration/test_files.py."""

import io
import os
import zipfile
from contextlib import contextmanager
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from clusters.models import Cluster
from sessions import files, paths
from sessions.files import Session, Space
from sessions.streaming import parse_range
from tests.local_sftp import LocalSFTP


@pytest.mark.parametrize(
    "path, cleaned",
    [("", ""), ("a/b", "a/b"), ("./a//b/", "a/b"), ("runs/42/model.pt", "runs/42/model.pt"), ("é ü.txt", "é ü.txt")],
)
def test_relative_paths_are_cleaned_to_plain_names(path, cleaned):
    assert paths.clean(path) == cleaned


@pytest.mark.parametrize(
    "path",
    ["..", "a/../../b", "a/..", "/etc/passwd", "~/x", "~labbob/x", "a\x00b", "a\nb", "a\x1b[31m", "x\x7f", "a\u0085b",
     "a\\..\\b", "x" * 256],
)  # fmt: skip
def test_traversal_absolute_paths_and_control_characters_are_refused(path):
    with pytest.raises(paths.PathRefused):
        paths.clean(path)


def test_a_resolved_path_is_inside_only_under_its_root():
    assert paths.inside("/home/s/lab", "/home/s/lab")
    assert paths.inside("/home/s/lab", "/home/s/lab/a/b")
    assert not paths.inside("/home/s/lab", "/home/s/lab-other/a")
    assert not paths.inside("/home/s/lab", "/home/s")


@pytest.mark.parametrize(
    "header, wanted",
    [
        ("", None),
        ("bytes=0-99", (0, 100)),
        ("bytes=100-", (100, 900)),
        ("bytes=-10", (990, 10)),
        ("bytes=900-5000", (900, 100)),
        ("bytes=1000-", False),
        ("bytes=5-1", False),
        ("bytes=0-1,5-6", None),  # several ranges: the whole file is a valid answer
        ("items=0-1", None),
    ],
)
def test_a_single_byte_range_is_understood(header, wanted):
    assert parse_range(header, 1000) == wanted


@pytest.fixture
def k8s(db, course):
    cluster = Cluster.objects.create(name="k8s", title="Teaching Kubernetes", kind="kubernetes")
    course.clusters.add(cluster)
    return cluster


def test_the_files_pages_need_a_login_and_another_course_s_cluster_is_404(client, cluster, carol, alice, api_for):
    page = reverse("sessions:cluster_files", args=[cluster.pk])
    api = reverse("api:files-cluster", args=[cluster.pk])
    assert client.get(page).status_code == 302
    assert client.get(api).status_code in (401, 403)
    client.force_login(carol)
    assert client.get(page).status_code == 404
    assert api_for(carol).get(api).status_code == 404
    assert api_for(carol).post(api + "mkdir/", {"name": "x"}, format="json").status_code == 404


def test_kubernetes_clusters_say_files_are_not_available(client, k8s, alice, api_for):
    client.force_login(alice)
    page = client.get(reverse("sessions:cluster_files", args=[k8s.pk]))
    assert page.status_code == 200
    assert "Files are not available on “Teaching Kubernetes”" in page.content.decode()
    answer = api_for(alice).get(reverse("api:files-cluster", args=[k8s.pk]))
    assert answer.status_code == 409 and "not available" in answer.json()["detail"]


def test_the_files_index_lists_the_user_s_clusters(client, cluster, alice):
    client.force_login(alice)
    page = client.get(reverse("sessions:files")).content.decode()
    assert reverse("sessions:cluster_files", args=[cluster.pk]) in page


def test_the_api_schema_describes_the_files_endpoints(api_for, alice):
    schema = api_for(alice).get(reverse("api:schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for suffix in ("", "download/", "text/", "mkdir/", "rename/", "delete/", "upload/"):
        assert f"/api/v1/files/clusters/{{cluster_id}}/{suffix}" in schema["paths"]
        assert f"/api/v1/files/jobs/{{job_id}}/{suffix}" in schema["paths"]


BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e",
        "\u200f", "\u061c"]  # fmt: skip


@pytest.fixture
def run_dir(tmp_path):
    """A student's run directory with an answer of their own, and another student's secret beside it."""
    mine, other = tmp_path / "mine", tmp_path / "other"
    mine.mkdir()
    other.mkdir()
    (mine / "own.txt").write_text("my own output")
    (other / "secret.txt").write_text("bob's answers")
    return mine


def session_on(folder, **fake) -> Session:
    return Session(Space(cluster=None, account=None, root=str(folder), title="run directory"), LocalSFTP(**fake))


def test_a_hard_linked_file_is_neither_downloaded_nor_previewed_and_the_refusal_says_why(run_dir):
    os.link(run_dir.parent / "other" / "secret.txt", run_dir / "answers.txt")
    session = session_on(run_dir)
    assert session.resolve_file("own.txt")[0] == str(run_dir / "own.txt")
    for read in (lambda: session.resolve_file("answers.txt"), lambda: session.text("answers.txt", tail=False)):
        with pytest.raises(paths.PathRefused, match="has 2 names on the cluster \\(a hard link\\)"):
            read()


def test_a_symlink_inside_the_space_to_a_hard_linked_file_is_refused_too(run_dir):
    os.link(run_dir.parent / "other" / "secret.txt", run_dir / "answers.txt")
    (run_dir / "shortcut.txt").symlink_to("answers.txt")
    with pytest.raises(paths.PathRefused, match="hard link"):
        session_on(run_dir).resolve_file("shortcut.txt")


def test_a_file_whose_link_count_the_server_does_not_say_is_not_read(run_dir):
    with pytest.raises(paths.PathRefused, match="would not say how many"):
        session_on(run_dir, longnames=False).resolve_file("own.txt")


def test_the_listing_marks_a_hard_link_and_shows_no_download_for_it(run_dir):
    os.link(run_dir.parent / "other" / "secret.txt", run_dir / "answers.txt")
    kinds = {entry.name: entry.kind for entry in session_on(run_dir).listing("")}
    assert kinds == {"answers.txt": "linked", "own.txt": "file"}


def test_an_archive_leaves_hard_links_out_and_says_which_and_why(run_dir):
    (run_dir / "sub").mkdir()
    os.link(run_dir.parent / "other" / "secret.txt", run_dir / "sub" / "answers.txt")
    session = session_on(run_dir)
    zipped = zipfile.ZipFile(io.BytesIO(b"".join(files.archive(session, session.walk(""), "zip"))))
    assert sorted(zipped.namelist()) == ["mine/LEFT-OUT.txt", "mine/own.txt"]
    note = zipped.read("mine/LEFT-OUT.txt").decode()
    assert "mine/sub/answers.txt" in note and "hard link" in note and "bob's answers" not in note


@pytest.mark.parametrize("control", BIDI)
def test_a_new_name_with_a_direction_control_is_refused_in_words(run_dir, control):
    name = f"invoice{control}txt.exe"
    with pytest.raises(paths.PathRefused, match="direction controls"):
        paths.check_name(name)
    session = session_on(run_dir)
    with pytest.raises(paths.PathRefused, match="direction controls"):
        session.rename("own.txt", name)
    with pytest.raises(paths.PathRefused, match="direction controls"):
        session.upload_chunk("", name, 4, 0, io.BytesIO(b"evil"))
    with pytest.raises(paths.PathRefused, match="direction controls"):
        session.mkdir("", name)
    assert sorted(os.listdir(run_dir)) == ["own.txt"]


def test_a_name_a_job_wrote_with_a_direction_control_is_shown_escaped_and_can_be_renamed(run_dir):
    (run_dir / "invoice\u202etxt.exe").write_text("x")
    session = session_on(run_dir)
    shown = {entry.shown for entry in session.listing("")}
    assert shown == {"invoice\\u202etxt.exe", "own.txt"}
    assert session.rename("invoice\u202etxt.exe", "invoice.exe") == "invoice.exe"


def test_the_files_page_shows_direction_controls_written_out(client, monkeypatch, cluster, alice, run_dir):
    (run_dir / "invoice\u202etxt.exe").write_text("x")
    (run_dir / "dir\u2067x").mkdir()
    space = Space(cluster=cluster, account=None, root=str(run_dir), title="Your files")

    @contextmanager
    def opened(space):
        yield Session(space, LocalSFTP())

    monkeypatch.setattr("sessions.views.home_space", lambda cluster, user: space)
    monkeypatch.setattr("sessions.views.opened", opened)
    client.force_login(alice)
    page = shown_text(client.get(reverse("sessions:cluster_files", args=[cluster.pk])))
    assert "invoice\\u202etxt.exe" in page and "dir\\u2067x/" in page
    assert not any(control in page for control in BIDI)
    inside = shown_text(client.get(reverse("sessions:cluster_files", args=[cluster.pk]), {"path": "dir\u2067x"}))
    assert "dir\\u2067x" in inside and not any(control in inside for control in BIDI)  # the breadcrumb


def shown_text(response) -> str:
    """The text a person sees (attributes such as data-path, which the page's script sends back, left out)."""
    parser = HTMLParser()
    seen: list[str] = []
    parser.handle_data = seen.append
    parser.feed(response.content.decode())
    return "".join(seen)


def test_the_files_page_labels_sizes_in_the_binary_units_it_counts_in(client, monkeypatch, cluster, alice, run_dir):
    (run_dir / "model.pt").write_bytes(b"\0" * (3 * 2**20 + 2**19))  # 3.5 MiB: 3.7 MB in decimal units
    space = Space(cluster=cluster, account=None, root=str(run_dir), title="Your files")

    @contextmanager
    def opened(space):
        yield Session(space, LocalSFTP())

    monkeypatch.setattr("sessions.views.home_space", lambda cluster, user: space)
    monkeypatch.setattr("sessions.views.opened", opened)
    client.force_login(alice)
    page = shown_text(client.get(reverse("sessions:cluster_files", args=[cluster.pk])))
    assert "3.5 MiB" in page and " MB" not in page and " KB" not in page
    assert "13 bytes" in page  # own.txt


@pytest.mark.parametrize(
    "size, shown", [(0, "0 bytes"), (1, "1 byte"), (1023, "1023 bytes"), (1536, "1.5 KiB"), (2**30, "1.0 GiB")]
)
def test_sizes_are_written_in_binary_units(size, shown):
    from sessions.templatetags.file_sizes import binary_size

    assert binary_size(size) == shown


def test_no_page_writes_a_binary_size_in_decimal_units():
    """Django's filesizeformat divides by 1,024 and writes "MB": no template may use it."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    users = [p for p in root.glob("*/templates/**/*.html") if "filesizeformat" in p.read_text()]
    users += [p for p in (root / "templates").glob("**/*.html") if "filesizeformat" in p.read_text()]
    assert users == []
