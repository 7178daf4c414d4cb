"""A TA sees and cancels the course's jobs and manages nothing of it (docs/roles.md); tests/test_access_table.py holds
every URL's answer, these the behaviour around it."""

import html
import json

import pytest
from django.urls import reverse

from core.choices import JobState
from courses.models import Enrollment, Role
from jobs import access
from jobs.models import JobTemplate
from notifications.models import CourseWebhook

pytestmark = pytest.mark.django_db


def _template_form(course, slug="ta-train"):
    params = [{"name": "epochs", "type": "int", "label": "Epochs", "default": 1, "min": 1, "max": 5}]
    return {
        "name": "TA's training",
        "backend": "slurm",
        "slug": slug,
        "description": "",
        "courses": [course.pk],
        "body": "echo {{ epochs }}\n",
        "parameters": json.dumps(params),
        "max_gpus": 1,
        "max_nodes": 1,
        "max_minutes": 10,
    }


def test_a_ta_is_told_that_only_instructors_author_and_publish_templates(login, course, ta, sleep_template):
    client = login(ta)
    response = client.post(reverse("jobs:template_new", args=[course.slug]), _template_form(course))
    assert response.status_code == 403
    told = html.unescape(response.content.decode())
    assert "Only the course's instructors author and publish its templates. Ask one of them." in told
    JobTemplate.objects.filter(pk=sleep_template.pk).update(status=JobTemplate.Status.DRAFT)
    assert client.post(reverse("jobs:template_publish", args=[course.slug, sleep_template.slug])).status_code == 403
    assert not JobTemplate.objects.filter(slug="ta-train").exists()
    assert JobTemplate.objects.get(pk=sleep_template.pk).status == JobTemplate.Status.DRAFT


def test_a_ta_who_instructs_another_course_cannot_put_a_template_into_the_one_they_assist(
    login, course, other_course, ta
):
    Enrollment.objects.create(course=other_course, user=ta, role=Role.INSTRUCTOR)
    form = _template_form(course)  # posted through their own course's editor, naming the course they assist
    response = login(ta).post(reverse("jobs:template_new", args=[other_course.slug]), form)
    assert response.status_code == 400 and "courses" in response.context["form"].errors
    assert not JobTemplate.objects.filter(slug="ta-train").exists()


def test_a_ta_reads_no_draft_template_of_the_course(course, ta, instructor, sleep_template):
    JobTemplate.objects.filter(pk=sleep_template.pk).update(status=JobTemplate.Status.DRAFT)
    assert list(access.visible_templates(ta)) == []
    assert list(access.visible_templates(instructor)) == [sleep_template]
    assert not access.may_author(ta, sleep_template) and access.may_author(instructor, sleep_template)


def test_a_ta_may_not_read_or_change_the_course_webhook(login, course, ta):
    client = login(ta)
    assert client.get(reverse("notifications:course_webhook", args=[course.slug])).status_code == 403
    data = {"url": "https://hooks.example.com/x", "events": [], "enabled": "on"}
    assert client.post(reverse("notifications:course_webhook", args=[course.slug]), data).status_code == 403
    assert not CourseWebhook.objects.exists()


def test_a_ta_may_not_change_quotas(login, course, ta, alice):
    data = {"max_concurrent_jobs": 99, "max_gpus": 99}
    assert login(ta).post(reverse("courses:quotas", args=[course.slug]), data).status_code == 403
    course.refresh_from_db()
    assert (course.max_concurrent_jobs, course.max_gpus) == (4, 4)


def test_a_ta_sees_the_course_page_without_links_to_the_instructors_pages(login, course, ta, instructor):
    ta_page = login(ta).get(reverse("courses:jobs", args=[course.slug])).content.decode()
    teacher_page = login(instructor).get(reverse("courses:jobs", args=[course.slug])).content.decode()
    for link in ("/roster/", "/templates/", "/quotas/", "/webhook/", "/budgets/", "/lab-sessions/", "/copy/"):
        assert f"/{course.slug}{link}" not in ta_page, link
        assert f"/{course.slug}{link}" in teacher_page, link
    assert f"/courses/{course.slug}/dashboard/" in ta_page
    catalog = login(ta).get(reverse("jobs:catalog")).content.decode()
    assert "manage templates" not in catalog and "class jobs" in catalog


def test_a_ta_cancels_a_students_job_and_the_timeline_names_them(login, running_job, ta, fake_backend):
    assert login(ta).post(reverse("jobs:cancel", args=[running_job.pk])).status_code == 302
    running_job.refresh_from_db()
    assert running_job.cancel_requested_at is not None or running_job.state == JobState.CANCELLED
    assert running_job.events.filter(actor=ta).exists()


def test_a_ta_may_not_keep_a_students_idle_job_and_is_offered_no_button(login, running_job, ta, alice):
    from django.utils import timezone

    from jobs.models import IdleWarning

    IdleWarning.objects.create(job=running_job, warned_at=timezone.now(), idle_minutes=30, max_util=1)
    response = login(ta).post(reverse("jobs:keep", args=[running_job.pk]))
    assert response.status_code == 403
    assert IdleWarning.objects.get(job=running_job).kept_at is None
    page = login(ta).get(running_job.get_absolute_url()).content.decode()
    assert 'id="idle-warning"' in page and 'id="keep-job"' not in page
    assert 'id="keep-job"' in login(alice).get(running_job.get_absolute_url()).content.decode()
