"""The MLBatch lab (labs/builtin_labs/mlbatch-inference.yaml): it loads, its steps launch the built-in batch-inference
template with values that template takes, a course without a Kubernetes cluster is told so at each such step, and
only the course's members see it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from clusters.models import Cluster
from jobs.builtin import builtin_definitions as builtin_templates
from jobs.builtin import load_builtin_templates
from labs.builtin import builtin_definitions, load_builtin_lab
from labs.models import Step

SLUG = "mlbatch-inference"


@pytest.fixture
def mlbatch(course, cluster):
    load_builtin_templates()
    return load_builtin_lab(course, SLUG)


def test_the_lab_s_steps_launch_the_built_in_batch_inference_template_with_values_it_takes(mlbatch, course):
    templates = {d["slug"]: d for d in builtin_templates()}
    launching = list(Step.objects.filter(section__lab=mlbatch, template__isnull=False).select_related("template"))
    assert [s.template.slug for s in launching] == ["k8s-vllm-benchmark", "k8s-vllm-benchmark"]
    for step in launching:
        assert step.template.slug in templates and step.template.backend == "kubernetes"
        schema = {p.name: p for p in step.template.schema()}
        for name, value in step.preset.items():
            assert schema[name].clean(value) == value  # within the parameter's range: the form would take it
        assert course.templates.filter(pk=step.template.pk).exists()  # its launch button finds it in the catalog
    first, second = launching
    assert first.fixed == ["max_concurrency"] and first.check_spec == {
        "kind": "log",
        "pattern": "Serving Benchmark Result",
    }
    assert second.check_spec == {"kind": "differs", "parameter": "max_concurrency"}
    assert first.preset["max_concurrency"] != second.preset["max_concurrency"]
    assert SLUG in builtin_definitions()


def test_a_course_without_a_kubernetes_cluster_is_told_at_each_launching_step(login, alice, mlbatch, course):
    page = login(alice).get(reverse("labs:lab", args=[course.slug, SLUG])).content.decode()
    assert page.count("No cluster of this course runs Kubernetes (API) jobs, so this step cannot be launched") == 2
    assert 'class="button primary step-launch"' not in page
    course.clusters.add(Cluster.objects.create(name="k8s", title="Lab Kubernetes", kind="kubernetes"))
    page = login(alice).get(reverse("labs:lab", args=[course.slug, SLUG])).content.decode()
    assert page.count('class="button primary step-launch"') == 2 and "No cluster of this course runs" not in page


def test_only_the_course_s_members_see_the_lab(client, login, ta, carol, mlbatch, course):
    url = reverse("labs:lab", args=[course.slug, SLUG])
    assert client.get(url).status_code == 302  # anonymous: to sign in
    assert login(carol).get(url).status_code == 404  # a student of another course
    assert "Read TTFT and TPOT" in login(ta).get(url).content.decode()
