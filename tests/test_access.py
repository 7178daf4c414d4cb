"""Who may see and do what: pages and API, anonymous / wrong user / right user."""

import pytest
from django.urls import reverse

from jobs.models import Job

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_job(make_job, alice):
    return make_job(alice)


JOB_PAGES = ["jobs:detail", "jobs:status", "jobs:log", "jobs:clone"]


@pytest.mark.parametrize("name", JOB_PAGES)
def test_anonymous_is_sent_to_login(client, alice_job, name):
    response = client.get(reverse(name, args=[alice_job.pk]))
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


@pytest.mark.parametrize("name", JOB_PAGES)
def test_student_cannot_open_other_students_job_pages(login, alice_job, bob, name):
    response = login(bob).get(reverse(name, args=[alice_job.pk]))
    assert response.status_code == 404


def test_student_cannot_cancel_other_students_job(login, alice_job, bob):
    response = login(bob).post(reverse("jobs:cancel", args=[alice_job.pk]))
    assert response.status_code == 404
    alice_job.refresh_from_db()
    assert alice_job.state == "queued" and alice_job.cancel_requested_at is None


def test_student_of_other_course_cannot_see_job(login, alice_job, carol):
    assert login(carol).get(reverse("jobs:detail", args=[alice_job.pk])).status_code == 404


def test_owner_sees_own_job(login, alice_job, alice):
    response = login(alice).get(reverse("jobs:detail", args=[alice_job.pk]))
    assert response.status_code == 200
    assert alice_job.short_id in response.content.decode()


def test_instructor_sees_and_cancels_students_job(login, alice_job, instructor):
    client = login(instructor)
    assert client.get(reverse("jobs:detail", args=[alice_job.pk])).status_code == 200
    client.post(reverse("jobs:cancel", args=[alice_job.pk]))
    alice_job.refresh_from_db()
    assert alice_job.state == "cancelled"
    assert alice_job.events.filter(to_state="cancelled", actor=instructor).exists()


def test_my_jobs_lists_only_own_jobs(login, make_job, alice, bob):
    mine, theirs = make_job(alice), make_job(bob)
    body = login(alice).get(reverse("jobs:my_jobs")).content.decode()
    assert mine.short_id in body and theirs.short_id not in body


def test_course_page_is_for_instructors_only(login, make_job, alice, instructor, course):
    job = make_job(alice)
    assert login(alice).get(reverse("courses:jobs", args=[course.slug])).status_code == 404
    body = login(instructor).get(reverse("courses:jobs", args=[course.slug])).content.decode()
    assert job.short_id in body and "alice" in body


def test_course_page_filters_by_state_student_and_template(login, make_job, alice, bob, instructor, course):
    alice_job, bob_job = make_job(alice), make_job(bob)
    Job.objects.filter(pk=bob_job.pk).update(state="running")
    client = login(instructor)
    url = reverse("courses:jobs", args=[course.slug])
    by_state = client.get(url, {"state": "running"}).content.decode()
    assert bob_job.short_id in by_state and alice_job.short_id not in by_state
    by_student = client.get(url, {"student": "alice"}).content.decode()
    assert alice_job.short_id in by_student and bob_job.short_id not in by_student
    by_template = client.get(url, {"template": "no-such-template"}).content.decode()
    assert alice_job.short_id not in by_template


def test_the_course_tables_refresh_answers_with_its_rows_only(
    login, make_job, alice, bob, instructor, course, django_assert_max_num_queries
):
    alice_job, bob_job = make_job(alice), make_job(bob)
    client = login(instructor)
    url = reverse("courses:jobs", args=[course.slug])
    with django_assert_max_num_queries(20) as full:
        page = client.get(url).content.decode()
    assert "<h2>Students</h2>" in page
    # htmx asks again every 5 s with the page's filters: the table, without the roster the page shows once.
    with django_assert_max_num_queries(len(full.captured_queries) - 2):
        rows = client.get(url, {"student": "bob"}, headers={"HX-Request": "true"}).content.decode()
    assert rows.lstrip().startswith('<table class="job-table">') and "Students" not in rows and "<html" not in rows
    assert bob_job.short_id in rows and alice_job.short_id not in rows
    assert login(bob).get(url, headers={"HX-Request": "true"}).status_code == 404  # a student's refresh too


def test_course_page_query_count_does_not_grow_with_jobs(
    login, make_job, alice, bob, instructor, course, django_assert_max_num_queries
):
    url = reverse("courses:jobs", args=[course.slug])
    client = login(instructor)
    make_job(alice)
    with django_assert_max_num_queries(20) as first:
        client.get(url)
    for owner in (alice, alice, bob, bob, bob):
        make_job(owner)
    with django_assert_max_num_queries(len(first.captured_queries)):
        client.get(url)


def test_my_jobs_query_count_does_not_grow_with_jobs(login, make_job, alice, django_assert_max_num_queries):
    client = login(alice)
    make_job(alice)
    with django_assert_max_num_queries(20) as first:
        client.get(reverse("jobs:my_jobs"))
    for _ in range(3):
        make_job(alice)
    with django_assert_max_num_queries(len(first.captured_queries)):
        client.get(reverse("jobs:my_jobs"))


class TestApiAccess:
    def test_anonymous_gets_401(self, client, alice_job):
        assert client.get(f"/api/v1/jobs/{alice_job.pk}/").status_code == 401
        assert client.get("/api/v1/jobs/").status_code == 401

    @pytest.mark.parametrize(
        ("method", "suffix"), [("get", ""), ("get", "log/"), ("post", "cancel/"), ("post", "clone/")]
    )
    def test_other_student_gets_404(self, api_for, alice_job, bob, method, suffix):
        response = getattr(api_for(bob), method)(f"/api/v1/jobs/{alice_job.pk}/{suffix}", format="json")
        assert response.status_code == 404

    def test_job_list_is_scoped_by_role(self, api_for, make_job, alice, bob, instructor, admin_user):
        a, b = make_job(alice), make_job(bob)

        def ids(user):
            return {row["id"] for row in api_for(user).get("/api/v1/jobs/").json()["results"]}

        assert ids(alice) == {str(a.pk)}
        assert ids(bob) == {str(b.pk)}
        assert ids(instructor) == {str(a.pk), str(b.pk)}
        assert ids(admin_user) == {str(a.pk), str(b.pk)}

    def test_job_json_has_the_documented_fields(self, api_for, alice_job, alice):
        body = api_for(alice).get(f"/api/v1/jobs/{alice_job.pk}/").json()
        for key in [
            "id",
            "state",
            "template",
            "cluster",
            "owner",
            "params",
            "scheduler_id",
            "created_at",
            "started_at",
            "finished_at",
            "exit_code",
            "error",
        ]:
            assert key in body
        assert body["owner"] == "alice" and body["template"] == "sleep-echo" and body["cluster"] == "local"


def test_a_jobs_dashboard_is_its_owners_alone_as_its_jupyterlab_is(alice_job, alice, bob, carol, ta, instructor):
    """The Ray dashboard's proxy asks access.get_job_dashboard: the owner; the course's TA and instructor see the job
    but get 403 (the same answer as for JupyterLab); another student, of this course or another, 404."""
    from django.contrib.auth.models import AnonymousUser
    from django.core.exceptions import PermissionDenied
    from django.http import Http404

    from jobs import access

    assert access.get_job_dashboard(alice, alice_job.pk) == alice_job
    for user, refusal in ((ta, PermissionDenied), (instructor, PermissionDenied), (bob, Http404), (carol, Http404)):
        with pytest.raises(refusal):
            access.get_job_dashboard(user, alice_job.pk)
        with pytest.raises(refusal):
            access.get_job_notebook(user, alice_job.pk)
    with pytest.raises(Http404):
        access.get_job_dashboard(AnonymousUser(), alice_job.pk)
