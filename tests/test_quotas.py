"""The instructor's quota page: who may open it, what saving changes, that overrides bind at launch, and the audit."""

import pytest
from django.urls import reverse

from courses.models import Enrollment, QuotaChange, QuotaOverride, Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def other_instructor(make_user, other_course):
    user = make_user("otto")
    Enrollment.objects.create(course=other_course, user=user, role=Role.INSTRUCTOR)
    return user


def form_data(course, students, **overrides):
    """The page's whole form as a browser would send it: course limits, then one pair of boxes per student."""
    data = {"max_concurrent_jobs": course.max_concurrent_jobs, "max_gpus": course.max_gpus}
    for student in students:
        data[f"max_concurrent_jobs__{student.pk}"] = ""
        data[f"max_gpus__{student.pk}"] = ""
    return data | overrides


def test_anonymous_is_sent_to_login(client, course):
    response = client.get(reverse("courses:quotas", args=[course.slug]))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_student_gets_404_and_changes_nothing(login, alice, course):
    client = login(alice)
    url = reverse("courses:quotas", args=[course.slug])
    assert client.get(url).status_code == 404
    assert client.post(url, form_data(course, [alice], max_gpus=99)).status_code == 404
    course.refresh_from_db()
    assert course.max_gpus == 4 and not QuotaChange.objects.exists()


def test_instructor_of_another_course_gets_404(login, other_instructor, course, alice):
    client = login(other_instructor)
    url = reverse("courses:quotas", args=[course.slug])
    assert client.get(url).status_code == 404
    assert client.post(url, form_data(course, [alice], **{f"max_gpus__{alice.pk}": 8})).status_code == 404
    assert not QuotaOverride.objects.exists()


def test_instructor_sees_every_student_and_saves_an_override(login, instructor, alice, bob, course):
    client = login(instructor)
    url = reverse("courses:quotas", args=[course.slug])
    page = client.get(url).content.decode()
    assert "alice" in page and "bob" in page and "No quota has been changed here yet." in page
    assert (
        reverse("courses:quotas", args=[course.slug])
        in client.get(reverse("courses:jobs", args=[course.slug])).content.decode()
    )
    response = client.post(url, form_data(course, [alice, bob], **{f"max_gpus__{alice.pk}": 8}), follow=True)
    assert response.status_code == 200 and "1 limit(s) changed" in response.content.decode()
    override = QuotaOverride.objects.get()
    assert (override.user, override.max_gpus, override.max_concurrent_jobs) == (alice, 8, None)


def test_admin_may_use_the_page(login, admin_user, alice, course):
    client = login(admin_user)
    url = reverse("courses:quotas", args=[course.slug])
    assert client.get(url).status_code == 200
    client.post(url, form_data(course, [alice], max_concurrent_jobs=6))
    course.refresh_from_db()
    assert course.max_concurrent_jobs == 6
    assert QuotaChange.objects.get().actor_username == "ada"


def test_every_change_is_audited_with_who_what_and_from_to(login, instructor, alice, bob, course):
    client = login(instructor)
    url = reverse("courses:quotas", args=[course.slug])
    client.post(url, form_data(course, [alice, bob], max_gpus=2, **{f"max_concurrent_jobs__{bob.pk}": 1}))
    client.post(url, form_data(course, [alice, bob], max_gpus=2))  # bob back to the course's limit
    changes = [(c.actor, c.student, c.field, c.old_value, c.new_value) for c in QuotaChange.objects.order_by("pk")]
    assert changes == [
        (instructor, None, "max_gpus", 4, 2),
        (instructor, bob, "max_concurrent_jobs", None, 1),
        (instructor, bob, "max_concurrent_jobs", 1, None),
    ]
    assert not QuotaOverride.objects.exists()  # an override with nothing left in it is removed
    page = client.get(url).content.decode()
    assert "every student" in page and "course limit" in page


def test_invalid_values_save_nothing_and_say_why(login, instructor, alice, course):
    client = login(instructor)
    url = reverse("courses:quotas", args=[course.slug])
    response = client.post(url, form_data(course, [alice], max_gpus="٢", **{f"max_gpus__{alice.pk}": "-1"}))
    assert response.status_code == 400
    assert "digits 0-9" in response.content.decode()
    assert not QuotaChange.objects.exists() and not QuotaOverride.objects.exists()


def test_override_binds_at_launch_for_that_student_only(
    login, api_for, instructor, alice, bob, course, cluster, sleep_template
):
    login(instructor).post(
        reverse("courses:quotas", args=[course.slug]),
        form_data(course, [alice, bob], **{f"max_concurrent_jobs__{alice.pk}": 1}),
    )
    body = {"template": "sleep-echo", "cluster": "local"}
    alice_api, bob_api = api_for(alice), api_for(bob)
    assert alice_api.post("/api/v1/jobs/", body, format="json").status_code == 201
    refused = alice_api.post("/api/v1/jobs/", body, format="json")
    assert refused.status_code == 403
    assert "your instructor set your limit to 1 at a time" in refused.json()["detail"]
    assert [bob_api.post("/api/v1/jobs/", body, format="json").status_code for _ in range(2)] == [201, 201]


def test_launch_page_shows_the_students_own_limits(login, instructor, alice, course, cluster, sleep_template):
    login(instructor).post(
        reverse("courses:quotas", args=[course.slug]), form_data(course, [alice], **{f"max_gpus__{alice.pk}": 7})
    )
    page = login(alice).get(reverse("jobs:launch", args=[course.slug, sleep_template.slug])).content.decode()
    assert "Your limits in this course: 4 unfinished job(s) and 7 GPU(s)" in page


def test_course_admin_changes_are_audited_too(login, admin_user, course):
    url = reverse("admin:courses_course_change", args=[course.pk])
    client = login(admin_user)
    form = client.get(url).context["adminform"].form
    data = {name: value for name, value in form.initial.items() if value is not None and name != "clusters"}
    data |= {"max_gpus": 6, "enrollments-TOTAL_FORMS": 0, "enrollments-INITIAL_FORMS": 0}
    assert client.post(url, data).status_code == 302
    assert [(c.field, c.old_value, c.new_value) for c in QuotaChange.objects.all()] == [("max_gpus", 4, 6)]
