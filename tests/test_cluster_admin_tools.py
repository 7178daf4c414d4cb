"""The cluster page's tools: "Stage lab files" is offered, drawn like the tools beside it, where the cluster's kind
runs jobs from a lab directory, and nowhere else."""

from html import unescape

import pytest
from django.urls import reverse

from clusters.models import Cluster

pytestmark = pytest.mark.django_db


def tools_of(page: str) -> str:
    return page.split('class="object-tools"')[1].split("</ul>")[0]


def test_a_slurm_cluster_offers_stage_lab_files_as_a_tool_that_posts(login, admin_user, cluster):
    page = login(admin_user).get(reverse("admin:clusters_cluster_change", args=[cluster.pk])).content.decode()
    tools = tools_of(page)
    stage = reverse("admin:cluster_stage", args=[cluster.pk])
    assert f'<form method="post" action="{stage}">' in tools and "csrfmiddlewaretoken" in tools
    assert '<button type="submit" class="object-tool"' in tools and ">Stage lab files</button>" in tools
    assert ".object-tools button.object-tool {" in page  # the admin's stylesheet draws it like the links


def test_a_kubernetes_cluster_has_no_lab_files_to_stage(login, admin_user):
    cluster = Cluster.objects.create(name="k8s", kind="kubernetes", api_url="https://k8s.example.edu:6443")
    admin = login(admin_user)
    page = admin.get(reverse("admin:clusters_cluster_change", args=[cluster.pk])).content.decode()
    assert "Stage lab files" not in tools_of(page) and "Test connection" in tools_of(page)
    answer = admin.post(reverse("admin:cluster_stage", args=[cluster.pk]), follow=True)
    assert "there are no files to stage" in unescape(answer.content.decode())


def test_staging_is_a_post_of_an_admin_who_may_change_the_cluster(client, login, alice, admin_user, cluster):
    stage = reverse("admin:cluster_stage", args=[cluster.pk])
    assert client.post(stage).status_code == 302 and "/login/" in client.post(stage).url
    assert "/login/" in login(alice).post(stage).url
    change = reverse("admin:clusters_cluster_change", args=[cluster.pk])
    assert login(admin_user).get(stage).url == change  # a GET stages nothing
