"""Instructors author templates with a preview; only templates that render and pass bash -n are published."""

import json

import pytest
from django.urls import reverse

from jobs.builtin import builtin_definitions, load_builtin_templates
from jobs.models import JobTemplate

pytestmark = pytest.mark.django_db

PARAMS = [{"name": "epochs", "type": "int", "label": "Epochs", "default": 1, "min": 1, "max": 5}]


def _form(course, body, params=PARAMS, slug="my-train"):
    return {
        "name": "My training",
        "backend": "slurm",
        "slug": slug,
        "description": "",
        "courses": [course.pk],
        "body": body,
        "parameters": json.dumps(params),
        "max_gpus": 1,
        "max_nodes": 1,
        "max_minutes": 10,
    }


def test_instructor_creates_previews_and_publishes(login, instructor, course):
    client = login(instructor)
    response = client.post(reverse("jobs:template_new", args=[course.slug]), _form(course, "echo {{ epochs }}\n"))
    assert response.status_code == 302
    template = JobTemplate.objects.get(slug="my-train")
    assert template.status == "draft" and template.created_by == instructor
    preview = client.post(reverse("jobs:template_preview", args=[course.slug]), _form(course, "echo {{ epochs }}"))
    assert "echo 1" in preview.content.decode()
    client.post(reverse("jobs:template_publish", args=[course.slug, "my-train"]))
    template.refresh_from_db()
    assert template.status == "published"


def test_template_failing_bash_n_cannot_be_published(login, instructor, course):
    client = login(instructor)
    client.post(reverse("jobs:template_new", args=[course.slug]), _form(course, "if true; then echo {{ epochs }}\n"))
    response = client.post(reverse("jobs:template_publish", args=[course.slug, "my-train"]), follow=True)
    assert "Not published: bash -n" in response.content.decode()
    assert JobTemplate.objects.get(slug="my-train").status == "draft"


def test_template_that_does_not_render_cannot_be_published(login, instructor, course):
    client = login(instructor)
    client.post(reverse("jobs:template_new", args=[course.slug]), _form(course, 'echo "{{ epochs }}"\n'))
    response = client.post(reverse("jobs:template_publish", args=[course.slug, "my-train"]), follow=True)
    assert "double quotes" in response.content.decode()
    assert JobTemplate.objects.get(slug="my-train").status == "draft"


def test_malformed_schema_is_a_form_error(login, instructor, course):
    bad = [{"name": "epochs", "type": "int", "default": 99, "max": 5}]
    response = login(instructor).post(reverse("jobs:template_new", args=[course.slug]), _form(course, "echo", bad))
    assert response.status_code == 400 and "default 99 is invalid" in response.content.decode()


def test_students_and_other_instructors_cannot_author(login, alice, instructor, course, make_user, other_course):
    from courses.models import Enrollment

    assert login(alice).get(reverse("jobs:template_new", args=[course.slug])).status_code == 404
    login(instructor).post(reverse("jobs:template_new", args=[course.slug]), _form(course, "echo {{ epochs }}"))
    stranger = make_user("stranger")
    Enrollment.objects.create(course=other_course, user=stranger, role="instructor")
    url = reverse("jobs:template_edit", args=[other_course.slug, "my-train"])
    assert login(stranger).get(url).status_code == 404


def test_editing_a_published_template_returns_it_to_draft(login, instructor, course):
    client = login(instructor)
    client.post(reverse("jobs:template_new", args=[course.slug]), _form(course, "echo {{ epochs }}"))
    client.post(reverse("jobs:template_publish", args=[course.slug, "my-train"]))
    client.post(reverse("jobs:template_edit", args=[course.slug, "my-train"]), _form(course, "echo changed"))
    assert JobTemplate.objects.get(slug="my-train").status == "draft"


def test_builtin_templates_load_and_publish(course):
    templates = load_builtin_templates([course])
    assert {t.slug for t in templates} == {d["slug"] for d in builtin_definitions()}
    assert {"gpu-check", "mpi-hello", "tiny-lm-single", "tiny-lm-ddp"} <= {t.slug for t in templates}
    assert all(t.status == "published" and t.builtin for t in templates)
