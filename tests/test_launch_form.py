"""The launch form as a student reads it: errors in their fields, one refusal, help for every built-in parameter,
their use of the quota, and how long earlier runs took."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from core.choices import JobState
from core.templating.params import parse_schema
from jobs.builtin import builtin_definitions
from jobs.forms import LaunchForm
from jobs.models import Job, JobTemplate
from jobs.states import transition

pytestmark = pytest.mark.django_db


def _url(course, template) -> str:
    return reverse("jobs:launch", args=[course.slug, template.slug])


def _field_block(html: str, name: str) -> str:
    """The HTML of one field's block, up to the next block."""
    start = html.index(f'id="field-{name}"')
    end = html.find('<div class="field', start + 1)
    return html[start : end if end > 0 else len(html)]


def test_each_error_is_inside_its_own_fields_block_with_a_summary_linking_to_it(
    login, alice, cluster, sleep_template, course
):
    response = login(alice).post(_url(course, sleep_template), {"cluster": cluster.pk, "param_seconds": 9999})
    html = response.content.decode()
    assert response.status_code == 400
    assert 'id="id_param_seconds_error"' in _field_block(html, "param_seconds")
    assert "less than or equal to 600" in _field_block(html, "param_seconds")
    assert "less than or equal to 600" not in _field_block(html, "param_gpus_per_node")
    summary = html[html.index('id="error-summary"') : html.index('<div class="field-grid">')]
    assert "data-focus-on-load" in summary
    assert '<a href="#id_param_seconds">Seconds: Ensure this value is less than or equal to 600.</a>' in summary


def test_quota_refusal_is_said_once_above_the_fields(login, alice, cluster, sleep_template, course):
    course.max_concurrent_jobs = 0
    course.save()
    data = {"cluster": cluster.pk, "param_partition": "debug", "param_time_minutes": 2, "param_gpus_per_node": 0}
    data |= {"param_seconds": 1, "param_exit_code": 0, "param_message": "hi"}
    html = login(alice).post(_url(course, sleep_template), data).content.decode()
    assert html.count("the course allows 0 at a time") == 1
    assert html.index('id="form-refusal"') < html.index('<div class="field-grid">')
    assert not Job.objects.exists()


def test_a_parameter_that_cannot_change_is_text_not_an_input(login, alice, cluster, course):
    template = JobTemplate.objects.create(
        name="One GPU",
        slug="one-gpu",
        body="nvidia-smi\n",
        parameters=[{"name": "gpus_per_node", "type": "int", "label": "GPUs", "default": 1, "min": 1, "max": 1}],
        status=JobTemplate.Status.PUBLISHED,
    )
    template.courses.add(course)
    html = login(alice).get(_url(course, template)).content.decode()
    block = _field_block(html, "param_gpus_per_node")
    assert 'name="param_gpus_per_node"' not in html and "<input" not in block
    assert '<p class="fixed-value" id="id_param_gpus_per_node">1 ' in block
    # A posted value for it is ignored: the template's value is the job's.
    login(alice).post(_url(course, template), {"cluster": cluster.pk, "param_gpus_per_node": 8})
    assert Job.objects.get().params["gpus_per_node"] == 1


def test_every_builtin_parameter_has_help_and_numbers_say_their_range():
    for definition in builtin_definitions():
        for param in parse_schema(definition["parameters"]):
            assert len(param.help) > 20, f"{definition['slug']}.{param.name} has no help text"
    template = JobTemplate(
        parameters=next(d for d in builtin_definitions() if d["slug"] == "tiny-lm-single")["parameters"]
    )
    form = LaunchForm(template=template, clusters=JobTemplate.objects.none())
    assert form.fields["param_time_minutes"].help_text.endswith("From 1 to 60.")
    assert "GPU memory" in form.fields["param_batch_size"].help_text


def test_a_whole_number_with_fractional_bounds_gets_whole_bounds_a_browser_accepts():
    """A number input counts its steps from its min: min="0.5" would make a browser refuse 1, 2 and 3."""
    parameters = [{"name": "epochs", "type": "int", "label": "Epochs", "default": 1, "min": 0.5, "max": 3.5}]
    form = LaunchForm(template=JobTemplate(parameters=parameters), clusters=JobTemplate.objects.none())
    html = str(form["param_epochs"])
    assert 'min="1"' in html and 'max="3"' in html


def test_student_sees_their_use_of_the_quota(login, alice, bob, cluster, sleep_template, course, make_job):
    make_job(alice, gpus_per_node=2)
    make_job(bob, gpus_per_node=1)  # another student's job counts for them, not for alice
    finished = make_job(alice, gpus_per_node=1)
    transition(finished, JobState.CANCELLED)
    html = login(alice).get(_url(course, sleep_template)).content.decode()
    assert "You are using <strong>1 of 4 jobs, 2 of 4 GPUs</strong>." in html


def test_full_quota_says_a_new_job_is_refused(login, alice, cluster, sleep_template, course, make_job):
    course.max_gpus = 2
    course.save()
    make_job(alice, gpus_per_node=2)
    html = login(alice).get(_url(course, sleep_template)).content.decode()
    assert "1 of 4 jobs, 2 of 2 GPUs</strong>: a new job is refused until" in html


def test_instructor_is_not_shown_a_quota(login, instructor, cluster, sleep_template, course):
    html = login(instructor).get(_url(course, sleep_template)).content.decode()
    assert 'id="quota-use"' not in html


def test_estimate_is_the_median_of_completed_runs_on_that_cluster(
    login, alice, bob, cluster, sleep_template, course, make_job
):
    now = timezone.now()
    for minutes, state in [(2, "completed"), (4, "completed"), (30, "completed"), (50, "failed")]:
        job = make_job(bob)
        transition(job, JobState.SUBMITTING)
        transition(job, JobState.RUNNING)
        transition(job, state, finished_at=now)
        Job.objects.filter(pk=job.pk).update(started_at=now - timedelta(minutes=minutes))
    html = login(alice).get(_url(course, sleep_template)).content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))
    assert "About 4 min on Local SLURM (median of 3 completed runs, with their own settings)" in text


def test_no_estimate_without_completed_runs(login, alice, cluster, sleep_template, course):
    html = login(alice).get(_url(course, sleep_template)).content.decode()
    assert "No completed run of this template yet" in html


def test_quota_use_counts_against_the_students_own_override(login, alice, instructor, sleep_template, course, make_job):
    from courses import quotas

    quotas.set_overrides(course, alice, {"max_gpus": 2}, actor=instructor)
    make_job(alice, gpus_per_node=1)
    html = login(alice).get(_url(course, sleep_template)).content.decode()
    assert "You are using <strong>1 of 4 jobs, 1 of 2 GPUs</strong>." in html


def test_a_huge_number_is_refused_as_out_of_range_not_as_wrong_digits(login, alice, cluster, sleep_template, course):
    html = login(alice).post(_url(course, sleep_template), {"cluster": cluster.pk, "param_seconds": "9" * 23})
    block = _field_block(html.content.decode(), "param_seconds")
    assert "less than or equal to 600" in block
    assert "digits 0-9" not in block


def test_wrong_text_in_a_number_field_says_what_kind_of_number(login, alice, cluster, sleep_template, course):
    block = _field_block(
        login(alice)
        .post(_url(course, sleep_template), {"cluster": cluster.pk, "param_seconds": "2.5"})
        .content.decode(),
        "param_seconds",
    )
    assert "Enter a whole number such as 2" in block


# fmt: off
CHOOSY_PARAMETERS = [
    {"name": "precision", "type": "choice", "label": "Precision", "default": "bf16",
     "choices": ["fp32", "bf16", "fp16"], "help": "Number format."},
    {"name": "size", "type": "choice", "label": "Size", "default": "tiny", "choices": ["tiny", "small", "big"]},
    {"name": "data", "type": "string", "label": "Data", "default": "", "pattern": "(?:[a-z]+(?:/[a-z]+)*)?",
     "pattern_help": "Give a path such as data/notes, in lower-case letters."},
    {"name": "tag", "type": "string", "label": "Tag", "default": "a", "pattern": "[a-z]+"},
    {"name": "epochs", "type": "int", "label": "Epochs", "default": 1, "min": 1, "max": 5},
]
# fmt: on


@pytest.fixture
def choosy_template(course):
    template = JobTemplate.objects.create(
        name="Choosy",
        slug="choosy",
        body="echo {{ precision }} {{ size }} {{ data }} {{ tag }}\n",
        parameters=CHOOSY_PARAMETERS,
        status=JobTemplate.Status.PUBLISHED,
    )
    template.courses.add(course)
    return template


def test_after_an_error_each_select_shows_what_was_posted_or_its_default_never_its_first_option(
    login, alice, cluster, choosy_template, course
):
    data = {"cluster": cluster.pk, "param_precision": "fp8", "param_size": "big", "param_data": "x", "param_tag": "a"}
    html = login(alice).post(_url(course, choosy_template), data | {"param_epochs": 99}).content.decode()
    precision, size = _field_block(html, "param_precision"), _field_block(html, "param_size")
    assert "fp8 is not one of the available choices" in precision  # the error still names what was posted
    assert '<option value="bf16" selected>' in precision and '<option value="fp32" selected>' not in precision
    assert '<option value="big" selected>' in size


def test_a_pattern_error_says_in_words_what_is_allowed_never_the_regular_expression(
    login, alice, cluster, choosy_template, course
):
    data = {"cluster": cluster.pk, "param_precision": "fp32", "param_size": "tiny", "param_epochs": 1}
    html = login(alice).post(_url(course, choosy_template), data | {"param_data": "../etc", "param_tag": "A!"})
    assert html.status_code == 400
    page = html.content.decode()
    assert "Give a path such as data/notes, in lower-case letters." in _field_block(page, "param_data")
    assert "not in the form this field asks for" in _field_block(page, "param_tag")
    assert "[a-z]" not in page.replace(choosy_template.body, "")
    assert not Job.objects.exists()


def test_every_builtin_pattern_says_in_words_what_it_allows():
    for definition in builtin_definitions():
        for param in parse_schema(definition["parameters"]):
            assert not param.pattern or len(param.pattern_help) > 20, f"{definition['slug']}.{param.name}"
