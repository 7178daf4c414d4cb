"""Roster import (command and upload form) and the instructor's pages."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from courses.models import Enrollment
from courses.roster import import_roster

pytestmark = pytest.mark.django_db


def test_import_enrolls_and_creates_accounts(course, alice):
    text = "username,email,role\nalice,,student\nzoe,zoe@example.edu,student\ntom,t@example.edu,TA\n"
    result = import_roster(course, text)
    assert result.ok and sorted(result.created_users) == ["tom", "zoe"]
    roles = dict(Enrollment.objects.filter(course=course).values_list("user__username", "role"))
    assert roles == {"alice": "student", "zoe": "student", "tom": "ta"}
    assert not Enrollment.objects.get(user__username="zoe").user.has_usable_password()


def test_a_bad_line_imports_nothing_and_names_every_problem(course):
    result = import_roster(course, "ok1,,student\nbad name,,student\nok2,not-an-email,student\nok3,,boss\nok1,,\n")
    assert not result.ok
    assert [e.split(":")[0] for e in result.errors] == ["Line 2", "Line 3", "Line 4", "Line 5"]
    assert not Enrollment.objects.filter(course=course).exists()


def test_every_problem_of_a_line_is_named_on_that_line(course):
    result = import_roster(course, "bad name,not-an-email,boss\n")
    [error] = result.errors
    assert error.startswith("Line 1:")
    assert "not a valid username" in error and "not a valid email" in error and "“boss” is not one of" in error


def test_a_missing_role_is_flagged_not_taken_as_student(course):
    result = import_roster(course, "zoe,zoe@example.edu\nyan,yan@example.edu,\n")
    assert [e.split(":")[0] for e in result.errors] == ["Line 1", "Line 2"]
    assert all("the role is missing" in e for e in result.errors)
    assert not Enrollment.objects.filter(course=course).exists()


def test_a_duplicate_line_names_its_other_problems_too(course):
    result = import_roster(course, "ok1,,student\nok1,nope,\n")
    [error] = result.errors
    assert "appears twice" in error and "not a valid email" in error and "role is missing" in error


def test_role_change_is_reported(course, alice):
    result = import_roster(course, "alice,,instructor\n")
    assert result.role_changed == ["alice"]


def test_command(course, tmp_path):
    from courses.models import Invitation

    roster = tmp_path / "roster.csv"
    roster.write_text("username,email,role\nnew1,new1@example.edu,student\nnew2,new2@example.edu,student\n")
    call_command("import_roster", "hpc", str(roster))
    assert Enrollment.objects.filter(course=course, user__username="new1").exists()
    assert sorted(Invitation.objects.values_list("user__username", flat=True)) == ["new1", "new2"]
    roster.write_text("new1,new1@example.edu,student\nnew3,new3@example.edu,student\n")
    call_command("import_roster", "hpc", str(roster), "--no-invite")
    assert Invitation.objects.count() == 2  # new1 already has an account; new3 was not to be mailed
    roster.write_text("bad name,,\n")
    with pytest.raises(CommandError, match="Nothing was imported"):
        call_command("import_roster", "hpc", str(roster))
    with pytest.raises(CommandError, match="No course"):
        call_command("import_roster", "nope", str(roster))


def test_upload_form_is_for_instructors(login, course, instructor, alice):
    url = reverse("courses:roster", args=[course.slug])
    upload = SimpleUploadedFile("r.csv", b"sam,sam@example.edu,student\n", content_type="text/csv")
    assert login(alice).post(url, {"roster": upload}).status_code == 404
    upload.seek(0)
    client = login(instructor)
    token = client.post(url, {"roster": upload}).context["token"]
    response = client.post(reverse("courses:roster_import", args=[course.slug]), {"preview": token})
    assert response.status_code == 302
    assert Enrollment.objects.filter(course=course, user__username="sam").exists()
    bad = SimpleUploadedFile("r.csv", b"bad name,,\n", content_type="text/csv")
    response = login(instructor).post(url, {"roster": bad})
    assert response.status_code == 400 and "Line 1" in response.content.decode()
