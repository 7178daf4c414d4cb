"""Rosters kept in step with campus groups: LDAP groups at sign-in and by `manage.py sync_course_groups`, OIDC
group claims at sign-in; removal from the group is reflected, hand-made enrollments are left alone, all audited."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from courses.models import Enrollment, Role
from courses.roster import import_roster
from signon.models import CourseGroup, GroupSyncChange, Source, SyncAction
from tests.sign_on import BASE_DN, PEOPLE_PASSWORD, SERVICE_DN, account

from .conftest import CampusBrowser

User = get_user_model()
pytestmark = pytest.mark.django_db


def role_of(course, username: str) -> str | None:
    return Enrollment.objects.filter(course=course, user__username=username).values_list("role", flat=True).first()


def leave_group(directory, group: str, *remaining: str) -> None:
    members = "".join(f"member: uid={uid},ou=people,{BASE_DN}\n" for uid in remaining)
    members = members or f"member: {SERVICE_DN}\n"  # groupOfNames must have a member: one that is nobody
    directory.modify(f"dn: cn={group},ou=groups,{BASE_DN}\nchangetype: modify\nreplace: member\n{members}")


@pytest.fixture
def linked(course):
    CourseGroup.objects.create(course=course, source=Source.LDAP, group="hpc-students", role=Role.STUDENT)
    CourseGroup.objects.create(course=course, source=Source.LDAP, group="hpc-tas", role=Role.INSTRUCTOR)
    return course


def test_ldap_sign_in_enrolls_group_members_with_the_groups_role(ldap_on, linked):
    Client().post("/login/", {"username": "lena", "password": PEOPLE_PASSWORD})
    Client().post("/login/", {"username": "tara", "password": PEOPLE_PASSWORD})
    assert role_of(linked, "lena") == Role.STUDENT
    assert role_of(linked, "tara") == Role.INSTRUCTOR
    change = GroupSyncChange.objects.get(username="lena")
    assert (change.action, change.source, change.groups, change.via) == ("enrolled", "ldap", "hpc-students", "sign-in")


def test_command_enrolls_members_who_never_signed_in_and_removes_those_who_left(ldap_on, linked):
    call_command("sync_course_groups")
    assert role_of(linked, "lena") == role_of(linked, "omar") == Role.STUDENT
    assert User.objects.get(username="omar").email == "omar@campus.example"  # made from the directory
    leave_group(ldap_on, "hpc-students", "omar")
    call_command("sync_course_groups", course=linked.slug)
    assert role_of(linked, "lena") is None
    assert role_of(linked, "omar") == Role.STUDENT
    removed = GroupSyncChange.objects.get(username="lena", action=SyncAction.REMOVED)
    assert (removed.via, removed.old_role) == ("command", Role.STUDENT)


def test_leaving_the_group_is_seen_at_the_next_sign_in(ldap_on, linked):
    Client().post("/login/", {"username": "lena", "password": PEOPLE_PASSWORD})
    leave_group(ldap_on, "hpc-students", "omar")
    Client().post("/login/", {"username": "lena", "password": PEOPLE_PASSWORD})
    assert role_of(linked, "lena") is None


def test_hand_made_enrollments_are_never_removed_by_group_sync(ldap_on, linked):
    import_roster(linked, "username,email,role\ntara,,student\nsam,,instructor\n")  # tara is in hpc-tas
    call_command("sync_course_groups")
    assert role_of(linked, "sam") == Role.INSTRUCTOR  # in none of the groups, enrolled by the instructor
    assert role_of(linked, "tara") == Role.STUDENT  # the roster's role stands
    assert not GroupSyncChange.objects.filter(username__in=["sam", "tara"]).exists()


def test_group_names_with_filter_metacharacters_match_no_group(ldap_on, course):
    CourseGroup.objects.create(course=course, source=Source.LDAP, group="*")
    call_command("sync_course_groups")
    assert not Enrollment.objects.exists()


def test_command_refuses_a_course_without_ldap_groups(ldap_on, course):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="names no LDAP group"):
        call_command("sync_course_groups", course=course.slug)


def test_oidc_group_claim_enrolls_and_a_later_sign_in_without_it_removes(oidc_on, course, instructor):
    CourseGroup.objects.create(course=course, source=Source.OIDC, group="hpc-students", role=Role.STUDENT)
    CourseGroup.objects.create(course=course, source=Source.OIDC, group="hpc-staff", role=Role.INSTRUCTOR)
    oidc_on.set_accounts({"lena": account("lena", "lena@campus.example", groups=["hpc-students", "hpc-staff"])})
    CampusBrowser(oidc_on).sign_in("lena")
    assert role_of(course, "lena") == Role.INSTRUCTOR  # the highest role of the matching groups
    oidc_on.set_accounts({"lena": account("lena", "lena@campus.example", groups=["hpc-students"])})
    CampusBrowser(oidc_on).sign_in("lena")
    assert role_of(course, "lena") == Role.STUDENT
    oidc_on.set_accounts({"lena": account("lena", "lena@campus.example", groups=[])})
    CampusBrowser(oidc_on).sign_in("lena")
    assert role_of(course, "lena") is None
    actions = list(GroupSyncChange.objects.filter(username="lena").order_by("pk").values_list("action", flat=True))
    assert actions == [SyncAction.ENROLLED, SyncAction.ROLE_CHANGED, SyncAction.REMOVED]


def test_directory_uid_becomes_the_cluster_username(ldap_on):
    from clusters.identity import cluster_username

    Client().post("/login/", {"username": "lena", "password": PEOPLE_PASSWORD})
    assert cluster_username(User.objects.get(username="lena")) == "lena"


def test_oidc_claim_becomes_the_cluster_username_and_a_bad_one_is_not_kept(oidc_on, campus_settings):
    from clusters.identity import cluster_username

    campus_settings(OIDC_CLUSTER_USERNAME_CLAIM="posix_login", **oidc_on.settings_env())
    oidc_on.set_accounts(
        {
            "lena": account("lena", "lena@campus.example", posix_login="lena42"),
            "sam": account("sam", "sam@campus.example", posix_login="root"),
        }
    )
    CampusBrowser(oidc_on).sign_in("lena")
    CampusBrowser(oidc_on).sign_in("sam")
    assert cluster_username(User.objects.get(username="lena")) == "lena42"
    assert cluster_username(User.objects.get(username="sam")) == ""  # root is refused; the sign-in still worked


def test_group_sync_changes_are_on_the_roster_as_made_by_campus_group_sync(ldap_on, linked):
    from courses.models import RosterChange

    Client().post("/login/", {"username": "lena", "password": PEOPLE_PASSWORD})
    leave_group(ldap_on, "hpc-students", "omar")
    call_command("sync_course_groups")
    rows = list(
        RosterChange.objects.filter(person_username="lena").order_by("pk").values_list("action", "actor_username")
    )
    assert rows == [("enrolled", "campus group sync"), ("removed", "campus group sync")]


def test_group_sync_never_removes_the_last_instructor(ldap_on, linked):
    Client().post("/login/", {"username": "tara", "password": PEOPLE_PASSWORD})  # hpc-tas: instructor
    assert role_of(linked, "tara") == Role.INSTRUCTOR
    leave_group(ldap_on, "hpc-tas")
    call_command("sync_course_groups")
    assert role_of(linked, "tara") == Role.INSTRUCTOR  # the course would have no instructor left
    assert not GroupSyncChange.objects.filter(username="tara", action=SyncAction.REMOVED).exists()
