"""Instructors author templates with a preview; only templates that render and pass bash -n are published."""

import json

import pytest
from django.urls import reverse

from jobs.builtin import builtin_definitions, load_builtin_templates
from jobs.models import JobTemplate
from tests.template_forms import editor_data

pytestmark = pytest.mark.django_db

PARAMS = [{"name": "epochs", "type": "int", "label": "Epochs", "default": 1, "min": 1, "max": 5}]


def _form(course, body, params=PARAMS, slug="my-train", action="save"):
    return editor_data(course, params=params, action=action, body=body, slug=slug)


def test_instructor_creates_previews_and_publishes(login, instructor, course):
    client = login(instructor)
    response = client.post(reverse("jobs:template_new", args=[course.slug]), _form(course, "echo {{ epochs }}\n"))
    assert response.status_code == 302
    template = JobTemplate.objects.get(slug="my-train")
    assert template.status == "draft" and template.created_by == instructor
    preview = client.post(reverse("jobs:template_preview", args=[course.slug]), _form(course, "echo {{ epochs }}"))
    assert "echo 1" in preview.content.decode()
    edit = reverse("jobs:template_edit", args=[course.slug, "my-train"])
    client.post(edit, _form(course, "echo {{ epochs }}\n", action="publish"))
    template.refresh_from_db()
    assert template.status == "published" and template.published_at is not None


def test_template_failing_bash_n_cannot_be_published(login, instructor, course):
    client = login(instructor)
    client.post(reverse("jobs:template_new", args=[course.slug]), _form(course, "if true; then echo {{ epochs }}\n"))
    response = client.post(_edit(course), _form(course, "if true; then echo {{ epochs }}\n", action="publish"))
    assert response.status_code == 400 and "bash -n" in " ".join(response.context["form"].errors["body"])
    assert JobTemplate.objects.get(slug="my-train").status == "draft"


def test_template_that_does_not_render_cannot_be_published(login, instructor, course):
    client = login(instructor)
    client.post(reverse("jobs:template_new", args=[course.slug]), _form(course, 'echo "{{ epochs }}"\n'))
    response = client.post(_edit(course), _form(course, 'echo "{{ epochs }}"\n', action="publish"))
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


def _edit(course, slug="my-train"):
    return reverse("jobs:template_edit", args=[course.slug, slug])


def _published(client, course, body="echo {{ epochs }}"):
    client.post(reverse("jobs:template_new", args=[course.slug]), _form(course, body, action="publish"))
    template = JobTemplate.objects.get(slug="my-train")
    assert template.status == "published"
    return template


CHANGED = [{**PARAMS[0], "default": 3, "label": "Passes"}]


def test_saving_a_published_template_keeps_the_published_version_live(
    login, api_for, instructor, alice, course, cluster
):
    client = login(instructor)
    template = _published(client, course)
    response = client.post(_edit(course), _form(course, "echo changed {{ epochs }}", CHANGED))
    assert response.status_code == 302
    template.refresh_from_db()
    assert template.status == "published" and template.body == "echo {{ epochs }}" and template.parameters == PARAMS
    assert template.draft.body == "echo changed {{ epochs }}" and template.draft.saved_by == instructor

    launched = login(alice).post(
        reverse("jobs:launch", args=[course.slug, "my-train"]), {"cluster": cluster.pk, "param_epochs": 1}
    )
    assert launched.status_code == 302
    job = template.jobs.get()
    assert "echo 1" in job.script and "changed" not in job.script and job.params == {"epochs": 1}
    [listed] = api_for(alice).get("/api/v1/templates/").json()["results"]
    assert listed["parameters"] == PARAMS

    page = login(instructor).get(_edit(course)).content.decode()
    assert "unpublished changes" in page and "Students launch the published version" in page
    assert "echo changed {{ epochs }}" in page  # the form holds the changes
    assert 'id="discard"' in page and "What students launch now" in page


def test_discarding_the_changes_puts_the_published_version_back_in_the_form(login, instructor, course):
    client = login(instructor)
    template = _published(client, course)
    client.post(_edit(course), _form(course, "echo changed {{ epochs }}"))
    response = client.post(reverse("jobs:template_status", args=[course.slug, "my-train"]), {"action": "discard"})
    assert response.status_code == 302
    assert not type(template).objects.filter(pk=template.pk, draft__isnull=False).exists()
    page = client.get(_edit(course)).content.decode()
    assert "echo changed" not in page and 'id="discard"' not in page and "Students launch this version" in page


def test_saving_the_published_content_again_leaves_no_unpublished_changes(login, instructor, course):
    client = login(instructor)
    _published(client, course)
    client.post(_edit(course), _form(course, "echo changed {{ epochs }}"))
    client.post(_edit(course), _form(course, "echo {{ epochs }}"))
    assert 'id="discard"' not in client.get(_edit(course)).content.decode()


def test_unpublishing_keeps_the_unpublished_changes_as_the_draft(login, instructor, course):
    client = login(instructor)
    template = _published(client, course)
    client.post(_edit(course), _form(course, "echo changed {{ epochs }}"))
    client.post(reverse("jobs:template_status", args=[course.slug, "my-train"]), {"action": "unpublish"})
    template.refresh_from_db()
    assert template.status == "draft" and template.body == "echo changed {{ epochs }}"
    assert "Draft: students do not see this template" in client.get(_edit(course)).content.decode()


def test_publish_publishes_what_is_in_the_form(login, instructor, course):
    client = login(instructor)
    template = _published(client, course)
    client.post(_edit(course), _form(course, "echo saved {{ epochs }}"))
    response = client.post(_edit(course), _form(course, "echo typed {{ epochs }}", CHANGED, action="publish"))
    assert response.status_code == 302
    template.refresh_from_db()
    assert template.body == "echo typed {{ epochs }}" and template.parameters == CHANGED
    assert template.status == "published" and not type(template).objects.filter(draft__isnull=False).exists()


def test_a_new_template_is_saved_and_published_in_one_step(login, instructor, course):
    client = login(instructor)
    response = client.post(
        reverse("jobs:template_new", args=[course.slug]), _form(course, "echo {{ epochs }}", action="publish")
    )
    assert response.status_code == 302
    assert JobTemplate.objects.get(slug="my-train").status == "published"


def test_publish_with_errors_publishes_and_saves_nothing_and_shows_them_in_the_field(login, instructor, course):
    client = login(instructor)
    template = _published(client, course)
    response = client.post(_edit(course), _form(course, "eval {{ epochs }}", action="publish"))
    assert response.status_code == 400
    assert "an argument of eval" in " ".join(response.context["form"].errors["body"])
    assert "eval {{ epochs }}" in response.content.decode()  # what was typed stays in the form
    assert "Not published, and nothing saved" in response.content.decode()
    template.refresh_from_db()
    assert template.body == "echo {{ epochs }}" and template.status == "published"
    assert not type(template).objects.filter(draft__isnull=False).exists()
    new = client.post(
        reverse("jobs:template_new", args=[course.slug]), _form(course, "eval {{ epochs }}", slug="x", action="publish")
    )
    assert new.status_code == 400 and not JobTemplate.objects.filter(slug="x").exists()


def test_builtin_templates_load_and_publish(course):
    templates = load_builtin_templates([course])
    assert {t.slug for t in templates} == {d["slug"] for d in builtin_definitions()}
    assert {"gpu-check", "mpi-hello", "tiny-lm-single", "tiny-lm-ddp"} <= {t.slug for t in templates}
    assert all(t.status == "published" and t.builtin for t in templates)


REFUSED_BODY = "echo start\n(( total = {{ epochs }} * 2 ))\n"
REFUSAL = "Line 2: {{ epochs }} is inside (( )) arithmetic, where a value would be evaluated"


def test_preview_names_the_line_the_context_and_the_fix(login, instructor, course):
    response = login(instructor).post(reverse("jobs:template_preview", args=[course.slug]), _form(course, REFUSED_BODY))
    text = response.content.decode()
    assert REFUSAL in text and "GPULAB_P_epochs" in text


def test_template_with_a_refused_placement_cannot_be_published_from_the_editor(login, instructor, course):
    client = login(instructor)
    client.post(reverse("jobs:template_new", args=[course.slug]), _form(course, REFUSED_BODY))
    response = client.post(_edit(course), _form(course, REFUSED_BODY, action="publish"))
    assert REFUSAL in " ".join(response.context["form"].errors["body"])
    assert JobTemplate.objects.get(slug="my-train").status == "draft"


def test_admin_publish_refuses_a_refused_placement(login, admin_user, instructor, course):
    template = JobTemplate.objects.create(
        name="T", slug="t", body="eval {{ epochs }}\n", parameters=PARAMS, created_by=instructor
    )
    template.courses.add(course)
    client = login(admin_user)
    changelist = reverse("admin:jobs_jobtemplate_changelist")
    response = client.post(changelist, {"action": "publish_selected", "_selected_action": [template.pk]}, follow=True)
    assert "an argument of eval, which runs it as code" in response.content.decode()
    data = {**_form(course, "eval {{ epochs }}\n"), "status": "published", "parameters": json.dumps(PARAMS)}
    placement = template.placements.get()
    data |= {"placements-TOTAL_FORMS": 1, "placements-INITIAL_FORMS": 1, "placements-0-id": placement.pk}
    data |= {"placements-0-template": template.pk, "placements-0-course": course.pk, "placements-0-position": ""}
    response = client.post(reverse("admin:jobs_jobtemplate_change", args=[template.pk]), data, follow=True)
    assert "Not published: Line 1: {{ epochs }} is an argument of eval" in response.content.decode()
    template.refresh_from_db()
    assert template.status == "draft"


def test_launching_a_template_published_before_the_check_is_refused(login, alice, course, cluster):
    """A template stored as published under older rules still cannot render a student's value into eval."""
    template = JobTemplate.objects.create(
        name="Old", slug="old", body="eval {{ epochs }}\n", parameters=PARAMS, status="published"
    )
    template.courses.add(course)
    course.clusters.add(cluster)
    url = reverse("jobs:launch", args=[course.slug, "old"])
    response = login(alice).post(url, {"cluster": cluster.pk, "param_epochs": 1})
    assert "eval" in response.content.decode() and not template.jobs.exists()


def test_api_launch_of_a_template_with_a_refused_placement_creates_no_job(api_for, alice, course, cluster):
    template = JobTemplate.objects.create(
        name="Old", slug="old", body="bash -c {{ epochs }}\n", parameters=PARAMS, status="published"
    )
    template.courses.add(course)
    course.clusters.add(cluster)
    response = api_for(alice).post(
        "/api/v1/jobs/", {"template": "old", "cluster": cluster.name, "params": {"epochs": 1}}, format="json"
    )
    assert 400 <= response.status_code < 500 and "bash -c" in response.content.decode()
    assert not template.jobs.exists()


def test_tiny_lm_templates_say_cpu_precision_and_batch_results_are_not_a_gpus(login, alice, course):
    tiny = [d for d in builtin_definitions() if "tinylm" in d["slug"].replace("-", "") and "server" not in d["slug"]]
    assert {d["slug"] for d in tiny} == {"tiny-lm-single", "tiny-lm-ddp", "k8s-tinylm-train"}
    for definition in tiny:
        assert "precision and batch results do not show what a GPU does" in " ".join(definition["description"].split())
    load_builtin_templates([course])
    page = login(alice).get(reverse("jobs:launch", args=[course.slug, "tiny-lm-single"])).content.decode()
    assert "do not show what a GPU does" in page
