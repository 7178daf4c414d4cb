"""The admin's cluster page says what a shared service account isolates (nothing) and what to do instead."""

from html import unescape

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_admin_sees_the_isolation_notice_on_the_cluster_page(login, admin_user, cluster):
    for url in (reverse("admin:clusters_cluster_change", args=[cluster.pk]), reverse("admin:clusters_cluster_add")):
        text = login(admin_user).get(url).content.decode()
        assert "Isolation between students." in text
        assert "can read, change and delete" in text and "give each their own identity" in text


def test_kubernetes_cluster_page_recommends_a_namespace_per_student(login, admin_user):
    from clusters.models import Cluster

    cluster = Cluster.objects.create(name="k8s", kind="kubernetes", api_url="https://k8s.example.edu:6443")
    text = unescape(login(admin_user).get(reverse("admin:clusters_cluster_change", args=[cluster.pk])).content.decode())
    assert "Isolation between students." in text and "set the course's namespaces to one per student" in text


def test_anonymous_and_non_staff_users_do_not_get_the_cluster_page(client, login, alice, instructor, cluster):
    url = reverse("admin:clusters_cluster_change", args=[cluster.pk])
    assert client.get(url).status_code == 302
    for user in (alice, instructor):
        response = login(user).get(url)
        assert response.status_code == 302 and "/login/" in response.url
