"""A course's templates come in the order its instructors set on the course's templates page (a new one goes last);
the students' catalog and GET /api/v1/templates/ follow it, course by course."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import Course
from jobs.models import JobTemplate
from tests.conftest import SLEEP_TEMPLATE_BODY, SLEEP_TEMPLATE_PARAMS
from tests.template_forms import editor_data

pytestmark = pytest.mark.django_db


def _template(slug, name, *courses):
    template = JobTemplate.objects.create(
        name=name, slug=slug, body=SLEEP_TEMPLATE_BODY, parameters=SLEEP_TEMPLATE_PARAMS, status="published"
    )
    template.courses.add(*courses)
    return template


@pytest.fixture
def handout(course, cluster):
    """Three labs added in the handout's order, which is not the alphabet's."""
    return [_template("lab-3", "Zero-copy I/O", course), _template("lab-1", "Profiling", course),
            _template("lab-2", "Mixed precision", course)]  # fmt: skip


def _move(client, course, slug, direction):
    return client.post(reverse("jobs:template_move", args=[course.slug, slug]), {"direction": direction})


def _catalog(client) -> list[str]:
    page = client.get(reverse("jobs:catalog")).content.decode()
    page = page[page.index("<h1>") :]  # the cards, not a message left from an earlier page
    names = ["Zero-copy I/O", "Profiling", "Mixed precision", "Late addition"]
    return sorted((n for n in names if n in page), key=page.index)


def _api(client, query="") -> list[str]:
    return [row["slug"] for row in client.get(f"/api/v1/templates/{query}").json()["results"]]


def test_templates_come_in_the_order_they_were_added_not_alphabetically(login, api_for, alice, course, handout):
    assert _catalog(login(alice)) == ["Zero-copy I/O", "Profiling", "Mixed precision"]
    assert _api(api_for(alice)) == ["lab-3", "lab-1", "lab-2"]


def test_the_instructor_orders_the_courses_templates_and_students_see_that_order(
    login, api_for, instructor, alice, course, handout
):
    client = login(instructor)
    assert _move(client, course, "lab-3", "down").status_code == 302
    assert _move(client, course, "lab-2", "up").status_code == 302
    listing = client.get(reverse("jobs:template_list", args=[course.slug])).content.decode()
    assert (
        listing.index('id="template-lab-1"')
        < listing.index('id="template-lab-2"')
        < listing.index('id="template-lab-3"')
    )
    assert _catalog(login(alice)) == ["Profiling", "Mixed precision", "Zero-copy I/O"]
    assert _api(api_for(alice)) == ["lab-1", "lab-2", "lab-3"]
    assert _api(api_for(alice), "?course=hpc") == ["lab-1", "lab-2", "lab-3"]


def test_a_new_template_goes_last(login, instructor, alice, course, handout):
    client = login(instructor)
    _move(client, course, "lab-1", "up")  # the course's order is now numbered
    data = editor_data(course, params=[], name="Late addition", slug="late", body="echo late", action="publish")
    assert client.post(reverse("jobs:template_new", args=[course.slug]), data).status_code == 302
    assert _catalog(login(alice)) == ["Profiling", "Zero-copy I/O", "Mixed precision", "Late addition"]


def test_each_course_has_its_own_order(api_for, login, other_instructor, carol, course, other_course, cluster):
    other_course.clusters.add(cluster)
    shared = _template("shared", "Shared", course, other_course)
    _template("ml-only", "ML only", other_course)
    assert _api(api_for(carol)) == ["shared", "ml-only"]
    _move(login(other_instructor), other_course, "shared", "down")
    assert _api(api_for(carol)) == ["ml-only", "shared"]
    assert list(course.templates.all()) == [shared]


def test_moving_past_either_end_changes_nothing(login, instructor, alice, course, handout):
    client = login(instructor)
    _move(client, course, "lab-3", "up")
    _move(client, course, "lab-2", "down")
    assert _catalog(login(alice)) == ["Zero-copy I/O", "Profiling", "Mixed precision"]


@pytest.mark.parametrize(("actor", "status"), [("alice", 404), ("ta", 403), ("other_instructor", 404)])
def test_only_the_courses_instructors_reorder_it(request, login, course, handout, actor, status):
    assert _move(login(request.getfixturevalue(actor)), course, "lab-2", "up").status_code == status
    assert _catalog(login(request.getfixturevalue("alice"))) == ["Zero-copy I/O", "Profiling", "Mixed precision"]


def test_a_template_of_another_course_or_a_wrong_direction_is_refused(login, instructor, course, other_course, handout):
    _template("elsewhere", "Elsewhere", other_course)
    client = login(instructor)
    assert _move(client, course, "elsewhere", "up").status_code == 404
    assert _move(client, course, "lab-2", "sideways").status_code == 400
    assert client.get(reverse("jobs:template_move", args=[course.slug, "lab-2"])).status_code == 405


def test_an_ended_course_keeps_its_order(login, instructor, course, handout):
    now = timezone.now()
    Course.objects.filter(pk=course.pk).update(term_starts_at=now - timedelta(days=90), term_ends_at=now)
    client = login(instructor)
    assert _move(client, course, "lab-2", "up").status_code == 403
    assert 'name="direction"' not in client.get(reverse("jobs:template_list", args=[course.slug])).content.decode()


def test_anonymous_is_sent_to_sign_in(client, course, handout):
    response = _move(client, course, "lab-2", "up")
    assert response.status_code == 302 and "/login/" in response.url


def test_the_templates_page_costs_the_same_queries_for_more_templates(login, instructor, course, handout):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = login(instructor)
    url = reverse("jobs:template_list", args=[course.slug])

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    few = queries()
    for n, source in enumerate(handout):
        JobTemplate.objects.filter(pk=_template(f"more-{n}", f"More {n}", course).pk).update(copied_from=source)
    assert queries() == few
