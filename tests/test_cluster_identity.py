"""Cluster usernames: what is refused, who may set them, and which account a job runs as in each run_as mode."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from clusters.choices import IdentitySource, RunAs
from clusters.identity import account_for, cluster_username, set_cluster_username
from clusters.kinds import KINDS
from clusters.models import AuthMethod, Cluster, ClusterAccount, ClusterIdentity
from jobs.access import LaunchRefused

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["root", "Bad Name", "../x", "", "1abc", "a" * 33, "jdoe;id", "slurm", "systemd-x"])
def test_invalid_or_system_cluster_usernames_are_refused(alice, name):
    with pytest.raises(ValidationError):
        set_cluster_username(alice, name)
    assert not ClusterIdentity.objects.filter(user=alice).exists()


def test_another_users_cluster_username_is_refused(alice, bob):
    set_cluster_username(alice, "alice01", source=IdentitySource.LDAP)
    with pytest.raises(ValidationError, match="another portal user"):
        set_cluster_username(bob, "alice01")
    assert cluster_username(bob) == ""


def test_a_name_another_user_registered_as_their_own_account_is_refused(alice, bob, cluster):
    ClusterAccount.objects.create(cluster=cluster, user=alice, username="alicehpc", auth_method=AuthMethod.PASSWORD)
    with pytest.raises(ValidationError, match="another portal user"):
        set_cluster_username(bob, "alicehpc")
    set_cluster_username(alice, "alicehpc")  # her own registered name is hers to have


def test_a_service_accounts_name_is_refused(alice, cluster):
    with pytest.raises(ValidationError, match="service account"):
        set_cluster_username(alice, "labsvc")


def test_sign_on_sets_the_username_with_its_source_and_again_changes_nothing(alice):
    first = set_cluster_username(alice, "jdoe_1", source=IdentitySource.OIDC)
    again = set_cluster_username(alice, "jdoe_1", source=IdentitySource.OIDC)
    assert again.pk == first.pk and again.updated_at == first.updated_at
    assert (again.username, again.source) == ("jdoe_1", IdentitySource.OIDC)


def test_shared_mode_runs_as_the_shared_user_never_the_service_account(alice, bob, cluster):
    own = ClusterAccount.objects.create(cluster=cluster, user=alice, username="alicehpc", auth_method=AuthMethod.KEY)
    assert account_for(cluster, alice) == own
    shared = account_for(cluster, bob)
    assert (shared.username, shared.auth_method, shared.user) == ("labshared", AuthMethod.VIA_SERVICE, bob)
    assert shared != cluster.service_account() and not shared.has_secret


def test_shared_mode_without_a_shared_user_refuses_to_launch_and_says_why(alice, cluster, make_job, sleep_template):
    Cluster.objects.filter(pk=cluster.pk).update(shared_user="")  # a cluster from before the shared user
    cluster.refresh_from_db()
    with pytest.raises(LaunchRefused, match="would run as the cluster's service account"):
        make_job(alice)
    assert not ClusterAccount.objects.filter(user=alice).exists()
    with pytest.raises(ValidationError, match="never as the service account"):
        cluster.full_clean()


@pytest.mark.parametrize(
    ("name", "why"),
    [("labsvc", "service account"), ("root", "system account"), ("Bad Name", "not a cluster user name")],
)
def test_the_shared_user_is_never_the_service_account_a_system_account_or_a_bad_name(cluster, name, why):
    cluster.shared_user = name
    with pytest.raises(ValidationError, match=why):
        cluster.full_clean()


def test_the_shared_user_is_nobodys_own_and_no_one_gets_it_as_theirs(alice, bob, cluster):
    set_cluster_username(alice, "alice01")
    cluster.shared_user = "alice01"
    with pytest.raises(ValidationError, match="own cluster username"):
        cluster.full_clean()
    with pytest.raises(ValidationError, match="every student's jobs share"):
        set_cluster_username(bob, "labshared")


def test_the_service_account_cannot_be_named_as_the_shared_user(login, admin_user, cluster):
    account = cluster.service_account()
    data = {"cluster": cluster.pk, "user": "", "username": "labshared", "auth_method": "password", "secret": ""}
    data.update(api_token="")
    url = reverse("admin:clusters_clusteraccount_change", args=[account.pk])
    response = login(admin_user).post(url, data)
    assert response.status_code == 200 and "the service account, which holds the portal" in response.content.decode()
    assert ClusterAccount.objects.get(pk=account.pk).username == "labsvc"


def test_new_clusters_run_jobs_as_each_students_own_user(db):
    made = {kind: Cluster.objects.create(name=kind, kind=kind, api_url="https://x.example.edu") for kind in KINDS}
    assert {kind: cluster.run_as for kind, cluster in made.items()} == {
        "slurm": RunAs.SUDO,
        "slurm-rest": RunAs.REST_USER,
        "kubernetes": RunAs.SERVICE,  # its students apart: a namespace per student, a new course's default
    }
    fresh = Cluster(name="fresh", host="login.example.edu")
    fresh.full_clean()
    assert fresh.run_as == RunAs.SUDO
    from clusters.backends.kinds.kubernetes.settings import course_settings
    from core.course_choices import NamespaceMode
    from courses.models import Course

    assert course_settings(Course.objects.create(slug="new", name="New")).namespace_mode == NamespaceMode.PER_STUDENT


def test_the_admins_new_cluster_form_starts_at_each_students_own_user(login, admin_user):
    client = login(admin_user)
    text = client.get(reverse("admin:clusters_cluster_add")).content.decode()
    assert '<option value="" selected>Each student&#x27;s own user' in text
    data = {"name": "campus", "title": "", "kind": "slurm", "enabled": "on", "run_as": "", "host": "login.example"}
    data.update({"port": "22", "lab_dir": "~/gpulab", "partitions": "", "gpu_types": ""})
    data.update({"accounts-TOTAL_FORMS": "0", "accounts-INITIAL_FORMS": "0"})
    response = client.post(reverse("admin:clusters_cluster_add") + "?kind=slurm", data)
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert Cluster.objects.get(name="campus").run_as == RunAs.SUDO


def test_student_user_modes_run_as_the_cluster_username_through_the_service_account(alice, cluster):
    cluster.run_as = RunAs.SUDO
    cluster.save()
    ClusterAccount.objects.create(cluster=cluster, user=alice, username="alicehpc", auth_method=AuthMethod.KEY)
    set_cluster_username(alice, "alice01")
    account = account_for(cluster, alice)
    assert (account.username, account.auth_method, account.has_secret) == ("alice01", AuthMethod.VIA_SERVICE, False)
    assert account_for(cluster, alice) == account  # one identity row per name
    set_cluster_username(alice, "alice02")
    assert account_for(cluster, alice).username == "alice02"
    assert ClusterAccount.objects.get(pk=account.pk).username == "alice01"  # earlier jobs keep theirs


def test_a_student_without_a_cluster_username_is_told_who_sets_it(alice, cluster, make_job, sleep_template):
    cluster.run_as = RunAs.SUDO
    cluster.save()
    with pytest.raises(LaunchRefused, match="Ask your instructor or an admin"):
        make_job(alice)


def test_the_launch_page_and_the_api_say_how_to_get_a_cluster_user(login, api_for, alice, cluster, sleep_template):
    cluster.run_as = RunAs.SUDO
    cluster.save()
    page = login(alice).get(reverse("jobs:launch", args=["hpc", sleep_template.slug])).content.decode()
    assert 'class="notice identity-gap"' in page and "you have no cluster username yet" in page
    assert "fourth column of the course roster" in page
    body = {"template": sleep_template.slug, "cluster": cluster.name, "params": {}}
    answer = api_for(alice).post("/api/v1/jobs/", body, format="json")
    assert answer.status_code == 403 and "fourth column of the course roster" in answer.json()["detail"]
    set_cluster_username(alice, "alice01")
    page = login(alice).get(reverse("jobs:launch", args=["hpc", sleep_template.slug])).content.decode()
    assert "identity-gap" not in page


def test_own_account_mode_refuses_students_without_one(alice, cluster, make_job, sleep_template):
    cluster.run_as = RunAs.OWN_ACCOUNT
    cluster.save()
    with pytest.raises(LaunchRefused, match="Register yours on your profile page"):
        make_job(alice)


def test_a_kind_offers_only_the_modes_it_supports(cluster):
    cluster.run_as = RunAs.REST_USER
    with pytest.raises(ValidationError, match="can run jobs as"):
        cluster.full_clean()
    cluster.kind, cluster.api_url = "slurm-rest", "http://127.0.0.1:6820"
    cluster.full_clean()


def test_admin_sets_a_cluster_username_and_invalid_ones_are_refused(login, admin_user, alice, bob):
    set_cluster_username(bob, "bob01")
    client = login(admin_user)
    url = reverse("admin:clusters_clusteridentity_add")
    for bad in ("root", "Bad Name", "../x", "bob01"):
        response = client.post(url, {"user": alice.pk, "username": bad, "source": "admin"})
        assert response.status_code == 200 and not ClusterIdentity.objects.filter(user=alice).exists(), bad
    response = client.post(url, {"user": alice.pk, "username": "alice01", "source": "admin"})
    assert response.status_code == 302
    identity = ClusterIdentity.objects.get(user=alice)
    assert (identity.username, identity.set_by) == ("alice01", admin_user)


def test_only_admins_reach_the_cluster_username_pages(client, login, alice, instructor):
    url = reverse("admin:clusters_clusteridentity_add")
    assert client.get(url).status_code == 302
    for user in (alice, instructor):
        response = login(user).get(url)
        assert response.status_code == 302 and "/login/" in response.url


def test_cluster_page_offers_run_as_and_says_when_students_are_isolated(login, admin_user, cluster):
    url = reverse("admin:clusters_cluster_change", args=[cluster.pk])
    text = login(admin_user).get(url).content.decode()
    assert 'name="run_as"' in text and "can read, change and delete" in text
    cluster.run_as = RunAs.SUDO
    cluster.save()
    text = login(admin_user).get(url).content.decode()
    assert "Run directories are private to their owner" in text and "can read, change and delete" not in text


def test_a_roster_column_sets_cluster_usernames(course, alice):
    from courses.roster import import_roster

    result = import_roster(
        course, "username,email,role,cluster_username\nalice,,student,alice01\nnew1,,student,new_1\n"
    )
    assert result.ok, result.errors
    identity = ClusterIdentity.objects.get(user__username="new1")
    assert (identity.username, identity.source) == ("new_1", IdentitySource.ROSTER)
    assert cluster_username(alice) == "alice01"


@pytest.mark.parametrize(("name", "why"), [("Bad Name", "not a cluster username"), ("root", "system account")])
def test_a_roster_with_a_refused_cluster_username_imports_nobody(course, name, why):
    from courses.roster import import_roster

    result = import_roster(course, f"newa,,student,newa\nnewb,,student,{name}\n")
    assert not result.ok and why in result.errors[0] and result.errors[0].startswith("Line 2")
    assert not ClusterIdentity.objects.exists() and not course.enrollments.exists()


def test_a_roster_giving_two_people_one_cluster_username_imports_nobody(course, bob):
    from courses.roster import import_roster

    set_cluster_username(bob, "shared")
    result = import_roster(course, "newa,,student,shared\n")
    assert not result.ok and "another portal user" in result.errors[0]
    assert cluster_username(bob) == "shared" and not course.enrollments.filter(user__username="newa").exists()


def test_an_identity_row_for_root_is_never_run_through_sudo(cluster):
    from clusters.backends.as_student import StudentShell
    from clusters.backends.base import BackendError

    for name in ("root", "labsvc", "../x"):
        with pytest.raises(BackendError, match="not a cluster username"):
            StudentShell(cluster, cluster.service_account(), name)


def test_admins_cannot_hand_make_an_identity_through_the_service_account(login, admin_user, alice, cluster):
    data = {"cluster": cluster.pk, "user": alice.pk, "username": "root", "auth_method": "via-service", "secret": "x"}
    response = login(admin_user).post(reverse("admin:clusters_clusteraccount_add"), data)
    assert response.status_code == 200 and "Cluster usernames" in response.content.decode()
    assert not ClusterAccount.objects.filter(user=alice).exists()


def test_a_roster_cannot_change_a_cluster_username_already_set(course, alice):
    from courses.roster import import_roster

    set_cluster_username(alice, "alice01", source=IdentitySource.LDAP)
    assert import_roster(course, "alice,,student,alice01\n").ok  # the same name: nothing to change
    result = import_roster(course, "alice,,student,other01\n")
    assert not result.ok and "already has the cluster username alice01; an admin changes it" in result.errors[0]
    assert cluster_username(alice) == "alice01"


def test_the_demo_gives_every_login_a_cluster_user_of_its_own(tmp_path):
    from django.core.management import call_command

    call_command("demo_setup", logins=tmp_path / "logins")
    names = dict(ClusterIdentity.objects.values_list("user__username", "username"))
    assert names == {
        "admin": "labadmin",
        "instructor": "labinstructor",
        "student1": "labstudent1",
        "student2": "labstudent2",
    }
    call_command("demo_setup", logins=tmp_path / "logins")  # again: nothing changes
    assert dict(ClusterIdentity.objects.values_list("user__username", "username")) == names
