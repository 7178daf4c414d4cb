"""GET /api/v1/templates/ offers what the catalog offers and may be launched now, for each role: nothing
unpublished, of another course, of a course out of its term, or that none of the course's clusters runs; each
template names only the caller's courses it may be launched in."""

from datetime import timedelta

import pytest
from django.utils import timezone

from courses.models import Course
from jobs.models import JobTemplate
from tests.conftest import SLEEP_TEMPLATE_BODY, SLEEP_TEMPLATE_PARAMS

pytestmark = pytest.mark.django_db


def listed(client, url="/api/v1/templates/") -> dict[str, list[str]]:
    response = client.get(url)
    assert response.status_code == 200
    return {row["slug"]: row["courses"] for row in response.json()["results"]}


def template(slug: str, *courses, status=JobTemplate.Status.PUBLISHED, backend=None) -> JobTemplate:
    row = JobTemplate.objects.create(
        name=slug.title(),
        slug=slug,
        body=SLEEP_TEMPLATE_BODY,
        parameters=SLEEP_TEMPLATE_PARAMS,
        status=status,
        **({"backend": backend} if backend else {}),
    )
    row.courses.add(*courses)
    return row


def set_term(course, starts, ends):
    Course.objects.filter(pk=course.pk).update(term_starts_at=starts, term_ends_at=ends)


@pytest.fixture
def shelf(course, other_course, cluster, sleep_template):
    """The published sleep template of the course; a draft; another course's template; one shared by both; and a
    Kubernetes template the course's only cluster (SLURM) cannot run."""
    other_course.clusters.add(cluster)
    template("draft", course, status=JobTemplate.Status.DRAFT)
    template("ml-only", other_course)
    template("shared", course, other_course)
    template("k8s", course, backend="kubernetes")
    return course


def test_a_student_gets_the_catalogs_templates_of_their_own_course_only(api_for, login, alice, shelf):
    assert listed(api_for(alice)) == {"shared": ["hpc"], "sleep-echo": ["hpc"]}
    page = login(alice).get("/").content.decode()
    assert "Sleep and echo" in page and "Shared" in page and "Draft" not in page and "Ml-Only" not in page


def test_a_student_of_another_course_gets_its_templates_and_does_not_learn_of_others(api_for, carol, shelf):
    assert listed(api_for(carol)) == {"ml-only": ["ml"], "shared": ["ml"]}
    assert api_for(carol).get("/api/v1/templates/sleep-echo/").status_code == 404
    assert api_for(carol).get("/api/v1/templates/draft/").status_code == 404


def test_a_student_gets_nothing_from_a_course_before_or_after_its_term(api_for, alice, instructor, shelf):
    now = timezone.now()
    set_term(shelf, now + timedelta(days=2), now + timedelta(days=90))
    assert listed(api_for(alice)) == {}
    assert set(listed(api_for(instructor))) == {"shared", "sleep-echo"}  # teachers try templates before the start
    set_term(shelf, now - timedelta(days=90), now - timedelta(hours=1))
    assert listed(api_for(alice)) == {} and listed(api_for(instructor)) == {}
    assert api_for(alice).get("/api/v1/templates/sleep-echo/").status_code == 404


def test_an_instructor_gets_the_published_templates_of_the_courses_they_teach(api_for, instructor, shelf):
    assert listed(api_for(instructor)) == {"shared": ["hpc"], "sleep-echo": ["hpc"]}


def test_an_admin_gets_every_courses_launchable_templates(api_for, admin_user, shelf):
    assert listed(api_for(admin_user)) == {"ml-only": ["ml"], "shared": ["hpc", "ml"], "sleep-echo": ["hpc"]}


def test_anonymous_callers_get_nothing(client, shelf):
    assert client.get("/api/v1/templates/").status_code in (401, 403)


def test_the_list_costs_the_same_queries_for_more_templates_and_courses(api_for, alice, shelf):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = api_for(alice)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            listed(client)
        return len(captured)

    few = queries()
    for n in range(5):
        more = Course.objects.create(slug=f"extra{n}", name=f"Extra {n}")
        more.enrollments.create(user=alice, role="student")
        template(f"more-{n}", shelf, more)
    assert queries() == few
