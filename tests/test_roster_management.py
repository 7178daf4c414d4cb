"""The instructor's roster page: who may use it, role changes and removals with their audit, invitations queued."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from courses.models import Enrollment, Invitation, Role, RosterChange
from jobs import access

pytestmark = pytest.mark.django_db


def roster_urls(course, person):
    return {
        "page": ("get", reverse("courses:roster", args=[course.slug])),
        "add": ("post", reverse("courses:roster_add", args=[course.slug])),
        "invite_all": ("post", reverse("courses:roster_invite_all", args=[course.slug])),
        "role": ("post", reverse("courses:roster_role", args=[course.slug, person.pk])),
        "remove": ("get", reverse("courses:roster_remove", args=[course.slug, person.pk])),
        "invite": ("post", reverse("courses:roster_invite", args=[course.slug, person.pk])),
    }


def test_anonymous_is_sent_to_log_in_for_every_roster_url(client, course, alice):
    for method, url in roster_urls(course, alice).values():
        response = getattr(client, method)(url)
        assert response.status_code == 302 and response.url.startswith("/login/"), url


def test_students_and_other_courses_instructors_get_404(login, course, alice, bob, other_instructor):
    for user in (alice, other_instructor):
        client = login(user)
        for method, url in roster_urls(course, bob).values():
            assert getattr(client, method)(url, {"role": "instructor"}).status_code == 404, (user, url)
    assert Enrollment.objects.get(user=bob).role == Role.STUDENT


def test_a_ta_sees_the_course_but_may_not_manage_its_roster(login, course, ta, alice):
    client = login(ta)
    assert client.get(reverse("courses:jobs", args=[course.slug])).status_code == 200
    for method, url in roster_urls(course, alice).values():
        response = getattr(client, method)(url, {"role": "ta"})
        assert response.status_code == 403, url
    assert "instructors manage its roster. Ask one of them." in response.content.decode()
    assert Enrollment.objects.get(user=alice).role == Role.STUDENT


def test_instructor_and_admin_open_the_roster(login, course, instructor, admin_user, alice):
    url = reverse("courses:roster", args=[course.slug])
    for user in (instructor, admin_user):
        response = login(user).get(url)
        assert response.status_code == 200
        assert "alice" in response.content.decode()


def test_instructor_makes_a_student_ta_and_the_change_is_recorded(login, course, instructor, alice):
    response = login(instructor).post(reverse("courses:roster_role", args=[course.slug, alice.pk]), {"role": "ta"})
    assert response.status_code == 302
    assert Enrollment.objects.get(user=alice, course=course).role == Role.TA
    change = RosterChange.objects.get(course=course, person=alice)
    assert (change.action, change.old_role, change.new_role, change.actor_username) == ("role", "student", "ta", "ines")
    assert course in access.teaching_courses(alice)  # a TA sees every job of the course
    page = login(instructor).get(reverse("courses:roster", args=[course.slug])).content.decode()
    assert "Role changed alice" in page


def test_the_last_instructor_cannot_be_demoted_or_removed(login, course, instructor):
    client = login(instructor)
    response = client.post(reverse("courses:roster_role", args=[course.slug, instructor.pk]), {"role": "student"})
    assert response.status_code == 302
    assert Enrollment.objects.get(user=instructor).role == Role.INSTRUCTOR
    client.post(reverse("courses:roster_remove", args=[course.slug, instructor.pk]))
    assert Enrollment.objects.filter(user=instructor, course=course).exists()
    page = client.get(reverse("courses:roster", args=[course.slug])).content.decode()
    assert "ines is the last instructor of HPC Lab. Make someone else an instructor first." in page
    assert not RosterChange.objects.exists()


def test_an_instructor_steps_down_once_there_is_another(login, course, instructor, alice):
    client = login(instructor)
    client.post(reverse("courses:roster_role", args=[course.slug, alice.pk]), {"role": "instructor"})
    client.post(reverse("courses:roster_role", args=[course.slug, instructor.pk]), {"role": "student"})
    roles = dict(Enrollment.objects.filter(course=course).values_list("user__username", "role"))
    assert roles == {"alice": "instructor", "ines": "student"}


def test_an_unknown_role_changes_nothing(login, course, instructor, alice):
    login(instructor).post(reverse("courses:roster_role", args=[course.slug, alice.pk]), {"role": "admin"})
    assert Enrollment.objects.get(user=alice).role == Role.STUDENT


def test_removing_a_student_keeps_their_jobs_and_says_so(login, course, instructor, alice, make_job):
    job = make_job(alice)
    client = login(instructor)
    url = reverse("courses:roster_remove", args=[course.slug, alice.pk])
    confirm = client.get(url).content.decode()
    assert "Their account stays" in confirm and "1 job here" in confirm and "not stopped" in confirm
    assert client.post(url).status_code == 302
    assert not Enrollment.objects.filter(user=alice, course=course).exists()
    assert access.get_job(alice, job.pk) == job  # her job, its log and charts stay hers
    assert access.get_job(instructor, job.pk) == job  # and on the course page
    change = RosterChange.objects.get(person=alice)
    assert (change.action, change.old_role) == ("removed", "student")


def test_someone_of_another_course_cannot_be_changed_through_this_one(login, course, instructor, carol):
    client = login(instructor)
    assert client.post(reverse("courses:roster_role", args=[course.slug, carol.pk]), {"role": "ta"}).status_code == 404
    assert client.post(reverse("courses:roster_remove", args=[course.slug, carol.pk])).status_code == 404


def test_a_roster_file_may_not_leave_the_course_without_an_instructor(login, course, instructor):
    upload = SimpleUploadedFile("r.csv", b"ines,,student\n", content_type="text/csv")
    response = login(instructor).post(reverse("courses:roster", args=[course.slug]), {"roster": upload})
    assert response.status_code == 400 and "without an instructor" in response.content.decode()
    assert Enrollment.objects.get(user=instructor).role == Role.INSTRUCTOR


def test_a_roster_file_may_swap_instructors(course, instructor, alice):
    from courses.roster import import_roster

    result = import_roster(course, "ines,,student\nalice,,instructor\n", actor=instructor)
    assert result.ok and sorted(result.role_changed) == ["alice", "ines"]


def test_import_queues_an_invitation_for_each_new_account_only(
    login, course, instructor, alice, inbox, django_capture_on_commit_callbacks
):
    upload = SimpleUploadedFile(
        "r.csv",
        b"alice,alice@example.edu,student\nzoe,zoe@example.edu,student\nyan,,student\n",
        content_type="text/csv",
    )
    client = login(instructor)
    token = client.post(reverse("courses:roster", args=[course.slug]), {"roster": upload}).context["token"]
    with django_capture_on_commit_callbacks() as queued:
        response = client.post(reverse("courses:roster_import", args=[course.slug]), {"preview": token})
    assert response.status_code == 302
    invited = Invitation.objects.filter(course=course)
    assert [i.user.username for i in invited] == ["zoe"]  # alice has an account; yan has no address
    assert invited[0].invited_by == instructor and invited[0].sent_at is None
    assert len(queued) == 1  # the mail task goes to the queue after the commit ...
    assert inbox.messages() == []  # ... and nothing was mailed inside the request
    page = login(instructor).get(reverse("courses:roster", args=[course.slug])).content.decode()
    assert "Not signed in yet (3)" in page  # alice has a password but has never logged in
    assert "no email</span> cannot be invited" in page and "invited</span>" in page


def test_adding_one_new_person_invites_them(login, course, instructor):
    response = login(instructor).post(
        reverse("courses:roster_add", args=[course.slug]), {"username": "sam", "email": "sam@example.edu", "role": "ta"}
    )
    assert response.status_code == 302
    enrollment = Enrollment.objects.get(user__username="sam", course=course)
    assert enrollment.role == Role.TA and not enrollment.user.has_usable_password()
    assert Invitation.objects.filter(user=enrollment.user, course=course).count() == 1
    assert RosterChange.objects.get(person=enrollment.user).action == "enrolled"


def test_adding_an_existing_account_enrolls_it_without_an_invitation(login, course, instructor, carol):
    client = login(instructor)
    response = client.post(reverse("courses:roster_add", args=[course.slug]), {"username": "Carol", "role": "student"})
    assert response.status_code == 302
    assert Enrollment.objects.filter(user=carol, course=course).exists()
    assert not Invitation.objects.exists()
    assert carol.check_password("correct-horse-battery-staple")


def test_a_new_person_without_an_email_is_refused_with_what_to_do(login, course, instructor):
    response = login(instructor).post(reverse("courses:roster_add", args=[course.slug]), {"username": "x", "role": ""})
    assert response.status_code == 400
    response = login(instructor).post(
        reverse("courses:roster_add", args=[course.slug]), {"username": "newbie", "role": "student"}
    )
    assert response.status_code == 400 and "give an email address to invite them" in response.content.decode()


def test_resend_goes_to_who_has_not_signed_in_once_a_minute(login, course, instructor, make_user):
    pending = make_user("pat", email="pat@example.edu")
    Enrollment.objects.create(course=course, user=pending)
    signed_in = make_user("sid", email="sid@example.edu", last_login=timezone.now())
    Enrollment.objects.create(course=course, user=signed_in)
    client = login(instructor)
    client.post(reverse("courses:roster_invite", args=[course.slug, pending.pk]))
    client.post(reverse("courses:roster_invite", args=[course.slug, pending.pk]))  # a double click
    client.post(reverse("courses:roster_invite", args=[course.slug, signed_in.pk]))
    assert [i.user.username for i in Invitation.objects.all()] == ["pat"]
    Invitation.objects.update(created_at=timezone.now() - timezone.timedelta(minutes=5))
    response = client.post(reverse("courses:roster_invite_all", args=[course.slug]))
    assert response.status_code == 302
    assert Invitation.objects.filter(user=pending).count() == 2
    assert not Invitation.objects.filter(user=signed_in).exists()


def test_the_roster_page_takes_the_same_queries_for_ten_or_forty_people(
    login, course, instructor, make_user, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = login(instructor)
    url = reverse("courses:roster", args=[course.slug])

    def queries_with(n: int) -> int:
        for i in range(Enrollment.objects.filter(course=course).count(), n):
            user = make_user(f"s{i:03d}", email=f"s{i}@example.edu")
            Enrollment.objects.create(course=course, user=user)
            Invitation.objects.create(course=course, user=user)
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    assert queries_with(10) == queries_with(40)


def test_admin_enrollment_changes_are_recorded_too(login, course, admin_user, alice, instructor):
    client = login(admin_user)
    enrollment = Enrollment.objects.get(user=alice)
    url = reverse("admin:courses_enrollment_change", args=[enrollment.pk])
    data = {"user": alice.pk, "course": course.pk, "role": "ta"}
    assert client.post(url, data).status_code == 302
    add = {"user": admin_user.pk, "course": course.pk, "role": "instructor"}
    assert client.post(reverse("admin:courses_enrollment_add"), add).status_code == 302
    mine = Enrollment.objects.get(user=instructor)
    delete = reverse("admin:courses_enrollment_delete", args=[mine.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 302
    changes = {(c.person_username, c.action, c.old_role, c.new_role) for c in RosterChange.objects.all()}
    assert changes == {
        ("alice", "role", "student", "ta"),
        ("ada", "enrolled", "", "instructor"),
        ("ines", "removed", "instructor", ""),
    }
    assert {c.actor_username for c in RosterChange.objects.all()} == {"ada"}
    assert client.get(reverse("admin:courses_rosterchange_changelist")).status_code == 200


def test_the_course_admins_enrollment_rows_are_recorded(login, course, admin_user, alice, instructor):
    enrollments = list(Enrollment.objects.filter(course=course).order_by("pk"))
    data = {
        "name": course.name,
        "slug": course.slug,
        "description": "",
        "max_concurrent_jobs": 4,
        "max_gpus": 4,
        "max_cpus": 16,
        "max_memory_gb": 96,
        "max_pods": 16,
        "max_volumes": 4,
        "namespace_mode": "course",
        "ingress_host": "",
        "enrollments-TOTAL_FORMS": len(enrollments) + 1,
        "enrollments-INITIAL_FORMS": len(enrollments),
        "enrollments-MIN_NUM_FORMS": 0,
        "enrollments-MAX_NUM_FORMS": 1000,
    }
    for i, enrollment in enumerate(enrollments):
        data |= {f"enrollments-{i}-id": enrollment.pk, f"enrollments-{i}-course": course.pk}
        data |= {f"enrollments-{i}-user": enrollment.user_id, f"enrollments-{i}-role": enrollment.role}
        if enrollment.user == alice:
            data[f"enrollments-{i}-role"] = "instructor"
        if enrollment.user == instructor:
            data[f"enrollments-{i}-DELETE"] = "on"
    n = len(enrollments)
    data |= {
        f"enrollments-{n}-course": course.pk,
        f"enrollments-{n}-user": admin_user.pk,
        f"enrollments-{n}-role": "ta",
    }
    response = login(admin_user).post(reverse("admin:courses_course_change", args=[course.pk]), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    changes = {(c.person_username, c.action, c.old_role, c.new_role) for c in RosterChange.objects.all()}
    assert changes == {
        ("alice", "role", "student", "instructor"),
        ("ines", "removed", "instructor", ""),
        ("ada", "enrolled", "", "ta"),
    }


def test_a_roster_line_finds_an_existing_account_whatever_the_case(course, carol):
    from courses.roster import import_roster

    result = import_roster(course, "CAROL,carol@example.edu,student\n")
    assert result.ok and result.created_users == [] and result.enrolled == ["CAROL"]
    assert Enrollment.objects.get(course=course).user == carol
