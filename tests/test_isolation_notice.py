"""The admin's cluster page says what a shared cluster user isolates (nobody) and what to do instead; every student
page that offers a shell or files (terminal, JupyterLab, Files) says so too where jobs share one identity."""

from contextlib import contextmanager
from html import unescape

import pytest
from django.urls import reverse

from clusters.choices import RunAs
from clusters.identity import set_cluster_username

pytestmark = pytest.mark.django_db
NOTICE = 'id="shared-identity-notice"'


def test_admin_sees_the_isolation_notice_on_the_cluster_page(login, admin_user, cluster):
    text = " ".join(
        login(admin_user).get(reverse("admin:clusters_cluster_change", args=[cluster.pk])).content.decode().split()
    )
    assert "Isolation between students." in text and "One user separates" in text and "<code>labshared</code>" in text
    assert "can read, change and delete" in text and "give each their own identity" in text
    assert "Jobs never run as the service account" in text


def test_a_shared_cluster_without_its_shared_user_tells_the_admin_to_name_one(login, admin_user, cluster):
    cluster.shared_user = ""
    cluster.save()
    text = " ".join(
        login(admin_user).get(reverse("admin:clusters_cluster_change", args=[cluster.pk])).content.decode().split()
    )
    assert "name the shared cluster user below, or students cannot launch here" in text


def test_the_new_cluster_page_says_students_are_apart_unless_the_admin_picks_the_shared_mode(login, admin_user):
    text = " ".join(unescape(login(admin_user).get(reverse("admin:clusters_cluster_add")).content.decode()).split())
    assert "A new cluster runs each student's jobs as their own cluster user" in text
    assert "It separates nobody" in text and "can read, change and delete" in text


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


# -- the student's pages ------------------------------------------------------------------------------------------


def test_the_terminal_of_a_job_run_as_the_shared_user_says_it_separates_nobody(login, alice, running_job):
    text = unescape(login(alice).get(reverse("sessions:job_terminal", args=[running_job.pk])).content.decode())
    assert NOTICE in text and "every student's jobs run as one cluster user, labshared" in text
    assert "this terminal separates nobody" in text


def test_the_terminal_of_a_job_run_as_the_students_own_user_has_no_such_notice(login, alice, cluster, make_job):
    cluster.run_as = RunAs.SUDO
    cluster.save()
    set_cluster_username(alice, "alice01")
    job = make_job(alice)
    assert NOTICE not in login(alice).get(reverse("sessions:job_terminal", args=[job.pk])).content.decode()


def test_the_notebook_page_of_a_shared_job_says_it_separates_nobody(login, alice, running_job):
    from core.choices import SessionKind

    running_job.template.session = SessionKind.JUPYTERLAB
    running_job.template.save()
    text = unescape(login(alice).get(reverse("sessions:job_notebook", args=[running_job.pk])).content.decode())
    assert NOTICE in text and "this JupyterLab separates nobody" in text


@contextmanager
def _unreachable(space):
    from sessions.files import FilesUnavailable

    raise FilesUnavailable("The test cluster is not reached.")
    yield


def test_the_files_pages_say_a_shared_space_separates_nobody(monkeypatch, login, alice, cluster, running_job):
    monkeypatch.setattr("sessions.views.opened", _unreachable)
    client = login(alice)
    own = unescape(client.get(reverse("sessions:cluster_files", args=[cluster.pk])).content.decode())
    assert NOTICE in own and "this file space separates nobody" in own
    run = unescape(client.get(reverse("sessions:job_files", args=[running_job.pk])).content.decode())
    assert NOTICE in run and "this run directory separates nobody" in run
    cluster.run_as = RunAs.SUDO
    cluster.save()
    set_cluster_username(alice, "alice01")
    assert NOTICE not in client.get(reverse("sessions:cluster_files", args=[cluster.pk])).content.decode()
