"""Roster import: any CSV read, previewed before anything is saved, and never a way into someone else's account."""

import codecs
import html

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from clusters.identity import cluster_username
from courses.models import Enrollment, Invitation, Role
from courses.roster import import_roster
from courses.roster_file import MAX_ROWS

pytestmark = pytest.mark.django_db

User = get_user_model()


def upload(client, course, data: bytes):
    """Upload a roster file: the preview page."""
    file = SimpleUploadedFile("roster.csv", data, content_type="text/csv")
    return client.post(reverse("courses:roster", args=[course.slug]), {"roster": file})


def confirm(client, course, token):
    return client.post(reverse("courses:roster_import", args=[course.slug]), {"preview": token}, follow=True)


def text_of(response) -> str:
    return html.unescape(response.content.decode())


def enrolled(course) -> set[str]:
    return set(Enrollment.objects.filter(course=course).values_list("user__username", flat=True))


def test_a_row_naming_another_courses_account_enrolls_it_and_never_changes_its_email(login, course, instructor, carol):
    carol.email, carol.first_name = "carol@campus.example", "Carol"
    carol.save()
    password = carol.password
    client = login(instructor)
    preview = upload(client, course, b"username,email,role,name\ncarol,attacker@evil.example,student,Mallory X\n")
    page = text_of(preview)
    assert "existing account, enrolled as it is" in page
    assert "an account outside this course: enrolled only; its email, name and password stay" in page
    assert "the file's address attacker@evil.example is not used" in page
    done = text_of(confirm(client, course, preview.context["token"]))
    carol.refresh_from_db()
    assert (carol.email, carol.first_name, carol.last_name, carol.password) == (
        "carol@campus.example",
        "Carol",
        "",
        password,
    )
    assert "carol" in enrolled(course) and not Invitation.objects.exists()
    assert "1 existing account(s) enrolled as they are, their email, name and password unchanged: carol" in done
    assert "carol: the file's address attacker@evil.example is not used: the account keeps its own." in done


def test_an_account_without_an_address_is_given_none_by_a_roster(course, make_user):
    quiet = make_user("quiet")  # e.g. made by an admin or a campus sign-in without a mail attribute
    result = import_roster(course, "quiet,attacker@evil.example,student\n")
    quiet.refresh_from_db()
    assert result.ok and quiet.email == "" and result.existing == ["quiet"]


def test_a_roster_gives_no_cluster_username_to_an_account_another_course_shares(course, other_course, alice):
    Enrollment.objects.create(course=other_course, user=alice, role=Role.STUDENT)
    result = import_roster(course, "alice,,student,attacker01\n")
    assert result.ok and cluster_username(alice) == ""
    assert "alice: the cluster username attacker01 is not used: an admin sets it." in result.notes


@pytest.mark.parametrize(
    "data",
    [
        codecs.BOM_UTF8 + b"username,email,role\nsam,sam@example.edu,student\n",
        "username,email,role\nsam,sam@example.edu,student\n".encode("utf-16"),  # with its byte order mark
    ],
    ids=["utf-8", "utf-16"],
)
def test_a_file_with_a_byte_order_mark_is_read(login, course, instructor, data):
    client = login(instructor)
    preview = upload(client, course, data)
    assert preview.status_code == 200, text_of(preview)
    confirm(client, course, preview.context["token"])
    assert "sam" in enrolled(course)


@pytest.mark.parametrize("ending", [b"\r", b"\n", b"\r\n"], ids=["cr", "lf", "crlf"])
def test_cr_lf_and_crlf_line_endings_are_read(login, course, instructor, ending):
    data = ending.join([b"username,email,role", b"sam,sam@example.edu,student", b"tom,tom@example.edu,ta", b""])
    preview = upload(login(instructor), course, data)
    assert preview.status_code == 200
    assert [(line.row.username, line.row.role) for line in preview.context["plan"].lines] == [
        ("sam", "student"),
        ("tom", "ta"),
    ]


def test_a_200_kb_field_is_refused_in_words(login, course, instructor):
    response = upload(login(instructor), course, b"sam,sam@example.edu,student," + b"x" * 200_000 + b"\n")
    assert response.status_code == 400
    assert "Line 1 cannot be read: a cell is longer than 320 characters." in text_of(response)
    assert not User.objects.filter(username="sam").exists()


def test_a_long_cell_a_huge_file_and_too_many_rows_are_refused_in_words(login, course, instructor):
    client = login(instructor)
    long_name = upload(client, course, b"name,username\n" + b"y" * 1000 + b",sam\n")
    assert long_name.status_code == 400 and "Line 2: a cell is longer than 320 characters." in text_of(long_name)
    huge = upload(client, course, b"sam,,student\n" * 90_000)
    assert huge.status_code == 400 and "The file is larger than 1 MB; split it." in text_of(huge)
    many = upload(client, course, b"".join(b"u%d,,student\n" % i for i in range(MAX_ROWS + 1)))
    assert many.status_code == 400 and f"The file has more than {MAX_ROWS} rows; split it." in text_of(many)
    assert list(enrolled(course)) == ["ines"]


def test_an_export_with_name_id_email_section_columns_enrolls_everyone_as_students(login, course, instructor):
    rows = ['"Lovelace, Ada",ada1,ada@example.edu,A'] + [f"Student {i},s{i},s{i}@example.edu,B" for i in range(60)]
    data = ("Name,ID,Email,Section\n" + "\n".join(rows) + "\n").encode()
    client = login(instructor)
    preview = upload(client, course, data)
    assert preview.status_code == 200 and preview.context["errors"] == []
    page = text_of(preview)
    assert "The file has no role column: everyone in it is enrolled as a student." in page
    assert "create <strong>61</strong> new accounts" in page
    confirm(client, course, preview.context["token"])
    ada = User.objects.get(username="ada1")
    assert (ada.first_name, ada.last_name, ada.email) == ("Ada", "Lovelace", "ada@example.edu")
    roles = set(Enrollment.objects.filter(course=course).exclude(user=instructor).values_list("role", flat=True))
    assert len(enrolled(course)) == 62 and roles == {Role.STUDENT}


def test_headers_are_matched_in_any_case_spacing_order_and_common_spelling(course):
    text = " E-Mail ;Full Name;NetID;Course Role;Phone\nsam@example.edu;Sam Smith;sam;TA;555\n"
    result = import_roster(course, text)
    assert result.ok, result.errors
    assert Enrollment.objects.get(user__username="sam").role == Role.TA
    assert "Columns not used: Phone." in result.notes


def test_a_header_without_a_username_column_says_which_to_name(course):
    result = import_roster(course, "Name,Email\nSam,sam@example.edu\n")
    [error] = result.errors
    assert error.startswith("No column names the username. The header line reads: Name, Email.")


def test_the_preview_lists_every_problem_of_a_line(login, course, instructor):
    data = b"username,email,role\nsam,not-an-email,,surplus\nok,,student\n"
    response = upload(login(instructor), course, data)
    assert response.status_code == 400 and response.context["token"] is None
    [error] = response.context["errors"]
    assert error.startswith("Line 2:")
    assert "an extra column (“surplus”)" in error and "not a valid email" in error and "the role is missing" in error


def test_the_preview_saves_nothing_until_the_instructor_confirms(login, course, instructor, alice):
    client = login(instructor)
    preview = upload(client, course, b"zoe,zoe@example.edu,student\nalice,,ta\n")
    assert preview.status_code == 200
    says = [line.says for line in preview.context["plan"].lines]
    assert says == ["new account, invited at zoe@example.edu", "already enrolled: student → teaching assistant"]
    assert not User.objects.filter(username="zoe").exists() and not Invitation.objects.exists()
    assert Enrollment.objects.get(user=alice).role == Role.STUDENT
    done = confirm(client, course, preview.context["token"])
    assert done.status_code == 200 and "zoe" in enrolled(course)
    assert Enrollment.objects.get(user=alice).role == Role.TA
    assert Invitation.objects.filter(user__username="zoe").count() == 1


def test_a_preview_is_saved_once_and_only_with_its_own_token(login, course, instructor):
    client = login(instructor)
    first = upload(client, course, b"zoe,zoe@example.edu,student\n").context["token"]
    assert "no longer open" in text_of(confirm(client, course, "forged"))
    second = upload(client, course, b"yan,yan@example.edu,student\n").context["token"]
    assert "no longer open" in text_of(confirm(client, course, first))  # replaced by the second file
    assert enrolled(course) == {"ines"}
    # What is saved is what was previewed: a file or rows posted with the confirmation are not read.
    extra = SimpleUploadedFile("r.csv", b"mallory,m@evil.example,instructor\n", content_type="text/csv")
    url = reverse("courses:roster_import", args=[course.slug])
    client.post(url, {"preview": second, "roster": extra, "rows": "mallory,m@evil.example,instructor"})
    assert enrolled(course) == {"ines", "yan"}
    assert "no longer open" in text_of(confirm(client, course, second))
    assert Invitation.objects.count() == 1


def test_a_ta_can_neither_preview_nor_import_a_roster(login, course, ta):
    client = login(ta)
    response = upload(client, course, b"zoe,zoe@example.edu,instructor\n")
    assert response.status_code == 403 and "instructors manage its roster" in text_of(response)
    assert client.post(reverse("courses:roster_import", args=[course.slug]), {"preview": "x"}).status_code == 403
    assert not User.objects.filter(username="zoe").exists()


def test_the_command_reads_a_bom_and_cr_only_file_and_says_who_was_enrolled_as_is(course, carol, tmp_path, capsys):
    roster = tmp_path / "roster.csv"
    roster.write_bytes(codecs.BOM_UTF8 + b"Name,ID,Email\rSam S,sam,sam@example.edu\rCarol,carol,x@evil.example\r")
    call_command("import_roster", course.slug, str(roster), "--no-invite")
    out = capsys.readouterr().out
    assert enrolled(course) == {"sam", "carol"}
    assert "carol: an account outside this course" in out and "existing account(s) enrolled as they are" in out
