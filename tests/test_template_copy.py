"""An instructor copies a built-in template into their course as a draft they own, to change its defaults; the copy
says what it came from, and the built-in template stays as it was."""

import pytest
from django.urls import reverse

from jobs import access
from jobs.builtin import load_builtin_templates
from jobs.models import JobTemplate
from tests.template_forms import editor_data_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def builtins(course):
    return {t.slug: t for t in load_builtin_templates([course])}


def _copy(course, slug="tiny-lm-single"):
    return reverse("jobs:template_copy", args=[course.slug, slug])


def test_instructor_copies_a_builtin_template_into_their_course_and_changes_its_defaults(
    login, instructor, course, builtins
):
    source = builtins["tiny-lm-single"]
    client = login(instructor)
    listing = client.get(reverse("jobs:template_list", args=[course.slug])).content.decode()
    assert _copy(course) in listing and 'id="builtin-templates"' not in listing  # every built-in one is in it

    response = client.post(_copy(course))
    copy = JobTemplate.objects.get(copied_from=source)
    assert response.status_code == 302 and response.url == reverse("jobs:template_edit", args=[course.slug, copy.slug])
    assert copy.slug == "tiny-lm-single-hpc" and not copy.builtin and copy.status == JobTemplate.Status.DRAFT
    assert copy.created_by == instructor and list(copy.courses.all()) == [course]
    assert copy.content() == source.content() and copy.session == source.session
    assert access.may_author(instructor, copy) and not access.may_author(instructor, source)

    page = client.get(response.url).content.decode()
    assert "Copied from the built-in template “Tiny LM" in page

    params = [dict(p) for p in copy.parameters]
    first = params[0]
    first["default"] = first["min"] if first["type"] == "int" and first.get("min") is not None else first["default"]
    changed = {**first, "label": "Changed label"}
    edit = reverse("jobs:template_edit", args=[course.slug, copy.slug])
    saved = client.post(edit, editor_data_of(copy, course, params=[changed, *params[1:]], action="publish"))
    assert saved.status_code == 302, saved.content.decode()[-2000:]
    copy.refresh_from_db()
    source.refresh_from_db()
    assert copy.parameters[0]["label"] == "Changed label" and copy.status == JobTemplate.Status.PUBLISHED
    assert source.parameters[0]["label"] != "Changed label" and source.builtin


def test_built_in_templates_the_course_lacks_are_offered_for_copying_too(login, instructor, course, other_course):
    load_builtin_templates([other_course])
    listing = login(instructor).get(reverse("jobs:template_list", args=[course.slug])).content.decode()
    assert 'id="builtin-templates"' in listing and _copy(course) in listing
    assert login(instructor).post(_copy(course)).status_code == 302
    assert JobTemplate.objects.get(copied_from__slug="tiny-lm-single").courses.get() == course


def test_copying_twice_gives_two_slugs(login, instructor, course, builtins):
    client = login(instructor)
    client.post(_copy(course))
    client.post(_copy(course))
    assert set(JobTemplate.objects.filter(builtin=False).values_list("slug", flat=True)) == {
        "tiny-lm-single-hpc",
        "tiny-lm-single-hpc-2",
    }


def test_a_course_copied_to_a_new_term_says_where_its_templates_came_from(instructor, course, sleep_template):
    from datetime import timedelta

    from django.utils import timezone

    from courses.copying import copy_to_new_term

    now = timezone.now()
    new = copy_to_new_term(course, actor=instructor, name="HPC 2", slug="hpc2", starts=now, ends=now + timedelta(30))
    assert new.templates.get().copied_from == sleep_template


@pytest.mark.parametrize("actor", ["alice", "ta", "other_instructor"])
def test_only_the_courses_instructors_copy_into_it(request, login, course, builtins, actor):
    user = request.getfixturevalue(actor)
    response = login(user).post(_copy(course))
    assert response.status_code == (403 if actor == "ta" else 404)
    assert not JobTemplate.objects.filter(builtin=False).exists()


def test_anonymous_is_sent_to_sign_in(client, course, builtins):
    response = client.post(_copy(course))
    assert response.status_code == 302 and "/login/" in response.url


def test_another_courses_own_template_cannot_be_copied(login, instructor, course, other_course, make_user):
    theirs = JobTemplate.objects.create(name="Theirs", slug="theirs", body="echo hi", parameters=[])
    theirs.courses.add(other_course)
    assert login(instructor).post(_copy(course, "theirs")).status_code == 404
    assert not JobTemplate.objects.filter(copied_from=theirs).exists()


def test_nothing_is_copied_into_an_ended_course(login, instructor, course, builtins):
    from datetime import timedelta

    from django.utils import timezone

    from courses.models import Course

    now = timezone.now()
    Course.objects.filter(pk=course.pk).update(term_starts_at=now - timedelta(days=90), term_ends_at=now)
    assert login(instructor).post(_copy(course)).status_code == 403
    assert not JobTemplate.objects.filter(builtin=False).exists()
