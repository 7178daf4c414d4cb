"""The file browser's rules that need no cluster: path cleaning, HTTP ranges, who reaches which space, and clusters
where files are not available (Kubernetes). The SFTP side is tests/integration/test_files.py."""

import pytest
from django.urls import reverse

from clusters.models import Cluster
from sessions import paths
from sessions.streaming import parse_range


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
