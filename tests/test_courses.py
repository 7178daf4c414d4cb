"""Roster import (command and upload form) and the instructor's pages."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from courses.models import Enrollment
from courses.roster import import_roster

pytestmark = pytest.mark.django_db


def test_import_enrolls_and_creates_accounts(course, alice):
    result = import_roster(course, "username,email,role\nalice,,student\nzoe,zoe@example.edu,\ntom,t@example.edu,TA\n")
    assert result.ok and sorted(result.created_users) == ["tom", "zoe"]
    roles = dict(Enrollment.objects.filter(course=course).values_list("user__username", "role"))
    assert roles == {"alice": "student", "zoe": "student", "tom": "instructor"}
    assert not Enrollment.objects.get(user__username="zoe").user.has_usable_password()


def test_a_bad_line_imports_nothing_and_names_every_problem(course):
    result = import_roster(course, "ok1,,student\nbad name,,student\nok2,not-an-email,student\nok3,,boss\nok1,,\n")
    assert not result.ok
    assert [e.split(":")[0] for e in result.errors] == ["Line 2", "Line 3", "Line 4", "Line 5"]
    assert not Enrollment.objects.filter(course=course).exists()


def test_role_change_is_reported(course, alice):
    result = import_roster(course, "alice,,instructor\n")
    assert result.role_changed == ["alice"]


def test_command(course, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("username,email,role\nnew1,new1@example.edu,student\n")
    call_command("import_roster", "hpc", str(roster))
    assert Enrollment.objects.filter(course=course, user__username="new1").exists()
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
    response = login(instructor).post(url, {"roster": upload})
    assert response.status_code == 302
    assert Enrollment.objects.filter(course=course, user__username="sam").exists()
    bad = SimpleUploadedFile("r.csv", b"bad name,,\n", content_type="text/csv")
    response = login(instructor).post(url, {"roster": bad})
    assert response.status_code == 400 and "Line 1" in response.content.decode()
