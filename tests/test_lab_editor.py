"""The instructor's lab editor through the pages: who may open it (the course's instructors; a TA is told no; anyone
else finds nothing), a step's typed form checked by the lab file's own spec and its template's parameters, hostile
Markdown inert in the preview, a lab file exported and imported back unchanged, hostile files refused with what to
fix, and the students' progress through edits and removals."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.choices import JobState
from jobs.models import Job, JobTemplate
from labs import lab_files
from labs.builtin import load_lab
from labs.models import Answer, Lab, LogMatch, Section, Step
from labs.progress import State, student_progress
from tests.test_labs import HOSTILE, Elements, lab_definition

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab(course, sleep_template, cluster):
    return load_lab(course, lab_definition())


def url(name: str, lab: Lab, *ids) -> str:
    return reverse(f"labs:{name}", args=[lab.course.slug, lab.slug, *ids])


def step_post(**overrides) -> dict:
    """A step form as a browser posts it: the Sleep and echo template, a log check, one quick fix."""
    data = {
        "action": "save",
        "title": "Echo the word",
        "instructions": "Run it and read the **log**.",
        "template": "sleep-echo",
        "p_message": "lab-word-7",
        "fix_message": "on",
        "p_seconds": "3",
        "check_kind": "log",
        "pattern": "lab-word-7",
        "bound": "at_least",
        "fix-TOTAL_FORMS": "1",
        "fix-INITIAL_FORMS": "0",
        "fix-MIN_NUM_FORMS": "0",
        "fix-MAX_NUM_FORMS": "20",
        "fix-0-states": ["failed"],
        "fix-0-text": "Set the exit code to 0 and launch again.",
    }
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}


# -- Who may open the editor ---------------------------------------------------------------------------------------


def test_only_the_course_instructors_open_the_editor(client, lab, instructor, ta, alice, other_instructor):
    editor = url("edit", lab)
    assert client.get(editor).status_code == 302  # anonymous: to the sign-in page
    client.force_login(alice)
    assert client.get(editor).status_code == 404
    client.force_login(other_instructor)
    assert client.get(editor).status_code == 404
    assert client.get(reverse("labs:new", args=[lab.course.slug])).status_code == 404
    client.force_login(ta)
    refused = client.get(editor)
    assert (
        refused.status_code == 403
        and b"Only the course&#x27;s instructors write and change its labs" in refused.content
    )
    step = Step.objects.get(section__lab=lab, title="Say the word")
    assert client.post(url("step_edit", lab, step.pk), step_post()).status_code == 403
    assert Step.objects.get(pk=step.pk).title == "Say the word"
    client.force_login(instructor)
    page = client.get(editor)
    assert page.status_code == 200 and b"Say the word" in page.content


def test_other_courses_instructor_cannot_reach_a_step_through_their_own_course(
    client, lab, other_course, other_instructor
):
    Lab.objects.create(course=other_course, slug="warm-up", title="Theirs")
    step = Step.objects.get(section__lab=lab, title="Say the word")
    client.force_login(other_instructor)
    mine = reverse("labs:step_edit", args=[other_course.slug, "warm-up", step.pk])
    assert client.get(mine).status_code == 404
    assert client.post(mine, step_post()).status_code == 404


def test_the_lab_page_links_the_editor_for_instructors_only(client, lab, instructor, ta, alice):
    page = url("lab", lab)
    for user, shown in ((instructor, True), (ta, False), (alice, False)):
        client.force_login(user)
        assert (b'id="edit-lab"' in client.get(page).content) is shown


# -- A lab, its sections -------------------------------------------------------------------------------------------


def test_an_instructor_makes_a_blank_lab_and_gives_it_sections(client, instructor, course):
    client.force_login(instructor)
    made = client.post(
        reverse("labs:new", args=[course.slug]), {"title": "Profiling day", "summary": "", "stuck_after_minutes": 15}
    )
    lab = Lab.objects.get(course=course, slug="profiling-day")
    assert made.url == url("edit", lab)
    page = client.get(made.url).content.decode()
    assert 'id="no-sections"' in page  # the empty state says what to do
    for title in ("Warm up", "Measure"):
        client.post(url("section_add", lab), {"new-title": title, "new-planned_minutes": "20"})
    first, second = lab.sections.order_by("position")
    client.post(url("section_move", lab, second.pk), {"direction": "up"})
    assert [s.title for s in lab.sections.order_by("position")] == ["Measure", "Warm up"]
    client.post(
        url("section_edit", lab, first.pk), {f"s{first.pk}-title": "Warm-up", f"s{first.pk}-planned_minutes": "5"}
    )
    first.refresh_from_db()
    assert (first.title, first.planned_minutes) == ("Warm-up", 5)
    refused = client.post(
        url("section_add", lab), {"new-title": "Too long", "new-planned_minutes": "5000"}, follow=True
    )
    assert "The section was not added" in refused.content.decode() and lab.sections.count() == 2


def test_a_lab_address_the_labs_pages_use_is_refused(client, instructor, course):
    client.force_login(instructor)
    page = client.post(
        reverse("labs:new", args=[course.slug]), {"title": "X", "slug": "new", "stuck_after_minutes": 15}
    )
    assert page.status_code == 400 and "names a page of the course" in page.content.decode()


# -- A step's form ---------------------------------------------------------------------------------------------------


def test_a_step_saved_from_the_form_shows_on_the_students_lab_page(client, lab, instructor, alice):
    section = lab.sections.get(position=1)
    client.force_login(instructor)
    saved = client.post(url("step_new", lab, section.pk), step_post())
    step = Step.objects.get(title="Echo the word")
    assert saved.status_code == 302 and saved.url.endswith(f"#step-{step.pk}")
    assert step.preset == {"seconds": 3, "message": "lab-word-7"}  # typed by the template's grammar
    assert step.fixed == ["message"] and step.check_spec == {"kind": "log", "pattern": "lab-word-7"}
    assert step.quick_fixes == [{"states": ["failed"], "text": "Set the exit code to 0 and launch again."}]
    assert (step.section_id, step.position) == (section.pk, 2)
    client.force_login(alice)
    page = client.get(url("lab", lab)).content.decode()
    assert f'id="step-{step.pk}"' in page and "<strong>log</strong>" in page


def test_a_step_form_refuses_values_its_template_does_not_take(client, lab, instructor):
    section = lab.sections.get(position=1)
    client.force_login(instructor)
    cases: dict[str, dict] = {
        "Must be at most 600": {"p_seconds": "9000"},
        "Enter a whole number": {"p_seconds": "3; rm -rf ~"},
        "Fixed values need a preset: exit_code": {"fix_exit_code": "on"},
        "A log check needs some text": {"pattern": "   "},
        "is fixed for this step, so two runs cannot differ": {"check_kind": "differs", "parameter": "message"},
        "A figure check needs value": {"check_kind": "figure", "figure": "gpu_util"},
        "Enter a number": {"check_kind": "figure", "figure": "gpu_util", "value": "lots"},
        "which one is correct": {"check_kind": "answer", "template": "", "choices": "A\nB", "correct": "C"},
        "A quick fix says when it applies": {"fix-0-states": None},
        "names the template it runs": {"template": "", "p_message": None, "fix_message": None},
    }
    for said, overrides in cases.items():
        page = client.post(url("step_new", lab, section.pk), step_post(**overrides))
        assert page.status_code == 400 and said in page.content.decode(), said
        assert 'id="error-summary"' in page.content.decode()
    assert not Step.objects.filter(title="Echo the word").exists()


def test_a_hostile_regular_expression_is_refused_as_a_pattern(client, lab, instructor):
    section = lab.sections.get(position=1)
    client.force_login(instructor)
    for pattern in ("(a+)+$", "^(a|aa)+$", "(.*a){20}", r"loss=\d+", "[0-9]+ steps", "x" * 201, "two\nlines"):
        page = client.post(url("step_new", lab, section.pk), step_post(pattern=pattern))
        assert page.status_code == 400, pattern
    page = client.post(url("step_new", lab, section.pk), step_post(pattern="(a+)+$")).content.decode()
    assert "looks like a regular expression" in page
    log_fix = client.post(url("step_new", lab, section.pk), step_post(**{"fix-0-log": ".*OOM.*"}))
    assert log_fix.status_code == 400
    kept = client.post(url("step_new", lab, section.pk), step_post(pattern="GPU(s) allocated: 1 [ok]"))
    assert kept.status_code == 302  # a log line's own brackets are text


def test_the_template_picked_shows_its_values_without_saving(client, lab, instructor, course):
    other = JobTemplate.objects.create(
        name="Counter",
        slug="counter",
        body="echo {{ times }}",
        parameters=[{"name": "times", "type": "int", "default": 1, "min": 1, "max": 9}],
    )
    other.courses.add(course)
    section = lab.sections.get(position=1)
    client.force_login(instructor)
    page = client.post(url("step_new", lab, section.pk), step_post(action="refresh", template="counter"))
    html = page.content.decode()
    assert page.status_code == 200 and 'name="p_times"' in html and 'name="p_seconds"' not in html
    assert 'id="error-summary"' not in html and not Step.objects.filter(title="Echo the word").exists()
    assert "Counter (draft: students cannot launch it)" in html


def test_another_courses_template_is_not_offered_nor_taken(client, lab, instructor, other_course):
    theirs = JobTemplate.objects.create(name="Theirs", slug="theirs", body="echo hi", parameters=[])
    theirs.courses.add(other_course)
    section = lab.sections.get(position=1)
    client.force_login(instructor)
    page = client.get(url("step_new", lab, section.pk)).content.decode()
    assert 'value="theirs"' not in page
    refused = client.post(
        url("step_new", lab, section.pk), step_post(template="theirs", p_message=None, fix_message=None)
    )
    assert refused.status_code == 400 and "Select a valid choice" in refused.content.decode()


def test_hostile_markdown_renders_inert_in_the_preview(client, lab, instructor):
    client.force_login(instructor)
    answer = client.post(url("preview", lab), {"instructions": HOSTILE})
    html = answer.content.decode()
    elements = Elements(html).found
    assert {tag for tag, _ in elements}.isdisjoint({"script", "iframe", "img", "object", "embed"})
    attributes = [(name, value or "") for _, attrs in elements for name, value in attrs.items()]
    assert not [name for name, _ in attributes if name.startswith("on")]
    assert not [value for name, value in attributes if name == "href" and "javascript" in value.lower()]
    assert "&lt;script&gt;" in html
    # Without scripts, Preview posts the whole form: the same renderer, nothing saved.
    section = lab.sections.get(position=1)
    page = client.post(url("step_new", lab, section.pk), step_post(action="preview", instructions=HOSTILE))
    preview = page.content.decode().split('id="instructions-preview"', 1)[1].split("</fieldset>")[0]
    assert "<script" not in preview and "&lt;script&gt;" in preview and not Step.objects.filter(title="Echo the word")


def test_quick_fixes_are_added_and_removed_in_the_form(client, lab, instructor):
    step = Step.objects.get(section__lab=lab, title="Say the word")
    client.force_login(instructor)
    page = client.get(url("step_edit", lab, step.pk)).content.decode()
    assert 'name="fix-0-text"' in page and 'name="fix-1-text"' in page  # the fix it has, and an empty one
    more = client.post(url("step_edit", lab, step.pk), step_post(**{"action": "more"})).content.decode()
    assert 'name="fix-1-text"' in more
    form = step_post(**{
        "fix-TOTAL_FORMS": "2", "fix-INITIAL_FORMS": "1", "fix-0-DELETE": "on",
        "fix-1-log": "CUDA out of memory", "fix-1-text": "Lower the batch size.",
    })  # fmt: skip
    assert client.post(url("step_edit", lab, step.pk), form).status_code == 302
    step.refresh_from_db()
    assert step.quick_fixes == [{"log": "CUDA out of memory", "text": "Lower the batch size."}]


# -- Progress through edits ----------------------------------------------------------------------------------------


def test_editing_a_step_keeps_its_progress_and_reads_runs_again_for_a_new_check(
    client, lab, instructor, alice, make_job
):
    step = Step.objects.get(section__lab=lab, title="Say the word")
    job = make_job(alice, message="lab-word-42")
    job.state, job.scheduler_id = JobState.COMPLETED, "1"
    job.save()
    LogMatch.objects.create(step=step, job=job, found=True)
    assert student_progress(lab, alice)[0].state == State.DONE
    client.force_login(instructor)
    page = client.get(url("step_edit", lab, step.pk)).content.decode()
    assert "1 student has progress on this step" in page
    client.post(
        url("step_edit", lab, step.pk), step_post(title="Say it", p_message="lab-word-42", pattern="lab-word-42")
    )
    assert LogMatch.objects.filter(step=step).exists()  # same text: what the log held is still known
    assert student_progress(lab, alice)[0].state == State.DONE
    client.post(url("step_edit", lab, step.pk), step_post(p_message="lab-word-42", pattern="another text"))
    assert not LogMatch.objects.filter(step=step).exists()  # another text: the logs are read again


def test_a_new_correct_choice_marks_the_answers_again(client, lab, instructor, alice):
    step = Step.objects.get(section__lab=lab, title="Which?")
    Answer.objects.create(step=step, student=alice, text="A", accepted=False)
    client.force_login(instructor)
    form = step_post(template="", p_message=None, fix_message=None, p_seconds=None, check_kind="answer")
    form.update(title="Which?", choices="A\nB", correct="A", section=str(step.section_id))
    assert client.post(url("step_edit", lab, step.pk), form).status_code == 302
    assert Answer.objects.get(step=step).accepted is True


def test_moving_a_step_keeps_its_answers(client, lab, instructor, alice):
    step = Step.objects.get(section__lab=lab, title="Which?")
    Answer.objects.create(step=step, student=alice, text="B", accepted=True)
    first = lab.sections.get(position=1)
    client.force_login(instructor)
    form = step_post(template="", p_message=None, fix_message=None, p_seconds=None, check_kind="answer")
    form.update(title="Which?", choices="A\nB", correct="B", section=str(first.pk))
    client.post(url("step_edit", lab, step.pk), form)
    step.refresh_from_db()
    assert (step.section_id, step.position) == (first.pk, 2) and Answer.objects.get(step=step).accepted
    client.post(url("step_move", lab, step.pk), {"direction": "up"})
    assert [s.title for s in first.steps.order_by("position")] == ["Which?", "Say the word"]
    assert student_progress(lab, alice)[0].state == State.DONE  # the answer moved with its step


def test_removing_a_step_with_progress_warns_first_and_keeps_the_runs(client, lab, instructor, alice, make_job):
    step = Step.objects.get(section__lab=lab, title="Which?")
    Answer.objects.create(step=step, student=alice, text="B", accepted=True)
    job = make_job(alice, message="lab-word-42")
    client.force_login(instructor)
    warning = client.get(url("step_remove", lab, step.pk)).content.decode()
    assert 'id="progress-warning"' in warning and "1 student has progress on this step" in warning
    assert "Their runs stay in their job lists" in warning
    assert Step.objects.filter(pk=step.pk).exists()  # the warning changes nothing
    done = client.post(url("step_remove", lab, step.pk), follow=True).content.decode()
    assert "Removed the step “Which?”" in done
    assert not Step.objects.filter(pk=step.pk).exists() and not Answer.objects.filter(student=alice).exists()
    assert Job.objects.filter(pk=job.pk, owner=alice).exists()
    assert [c.step.title for c in student_progress(lab, alice)] == ["Say the word"]


def test_removing_a_section_without_progress_says_nothing_is_lost(client, lab, instructor):
    section = lab.sections.get(position=2)
    client.force_login(instructor)
    warning = client.get(url("section_remove", lab, section.pk)).content.decode()
    assert 'id="no-progress"' in warning and "It holds 1 step" in warning
    client.post(url("section_remove", lab, section.pk))
    assert list(lab.sections.values_list("title", "position")) == [("Start", 1)]


def test_an_ended_course_keeps_its_labs_as_they_are(client, lab, instructor, course):
    from datetime import timedelta

    from django.utils import timezone

    course.term_starts_at, course.term_ends_at = timezone.now() - timedelta(days=90), timezone.now() - timedelta(days=1)
    course.save()
    client.force_login(instructor)
    assert 'id="read-only-notice"' in client.get(url("edit", lab)).content.decode()
    assert client.post(url("section_add", lab), {"new-title": "Late", "new-planned_minutes": "5"}).status_code == 403
    assert not lab.sections.filter(title="Late").exists()


# -- Lab files: export, import, hostile files -------------------------------------------------------------------------


def test_a_lab_exported_and_imported_again_is_the_same_lab(client, lab, instructor, course):
    client.force_login(instructor)
    exported = client.get(url("export", lab))
    assert exported["Content-Disposition"] == f'attachment; filename="{course.slug}-warm-up.yaml"'
    text = exported.content.decode()
    imported = client.post(reverse("labs:import", args=[course.slug]), {"text": text}, follow=True)
    assert "Imported “Warm-up” as “warm-up-2”" in imported.content.decode()
    copy = Lab.objects.get(course=course, slug="warm-up-2")
    again = client.get(url("export", copy)).content.decode()
    assert again == text.replace("slug: warm-up\n", "slug: warm-up-2\n", 1)
    assert lab_files.parse(again)["sections"] == lab_files.parse(text)["sections"]


def test_every_builtin_lab_survives_a_round_trip(course, cluster):
    from jobs.builtin import load_builtin_templates
    from labs.builtin import builtin_definitions, load_builtin_lab
    from labs.loading import import_lab

    load_builtin_templates()
    for slug in builtin_definitions():
        lab = load_builtin_lab(course, slug)
        text = lab_files.dump(lab_files.definition_of(lab))
        copy = import_lab(course, lab_files.parse(text))
        assert lab_files.dump(lab_files.definition_of(copy)) == text.replace(
            f"slug: {slug}\n", f"slug: {copy.slug}\n", 1
        )


def hostile_files() -> dict[str, str]:
    """Lab files that must be refused, by what the refusal says."""
    base = lab_files.dump(lab_definition())
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
        for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
    )  # a billion x's, were the aliases expanded
    sneaky = lab_definition()
    sneaky["sections"][0]["steps"][0]["run"] = "rm -rf ~"
    return {
        "is at most 256 kB": base + "#" + "x" * 300_000,
        "Nested deeper than a lab file goes": "slug: x\nsections: " + "[" * 50 + "]" * 50,
        "Anchors and aliases": laughs,
        "Only plain YAML is read: remove the tag": "!!python/object/apply:os.system ['touch /tmp/owned']",
        "step 1 “Say the word”, run: Unknown key: use only title, instructions": lab_files.dump(sneaky),
        "“theirs” is not one of this course's templates": lab_files.dump(lab_definition(template="theirs")),
        "preset seconds: Seconds: Must be at most 600": lab_files.dump(
            lab_definition(preset={"seconds": 9000}, fixed=[])
        ),
        "looks like a regular expression": lab_files.dump(lab_definition(check={"kind": "log", "pattern": "(a+)+$"})),
        "A lab file is a mapping": "- just\n- a list\n",
    }


def test_hostile_lab_files_are_refused_saying_what_to_fix(
    client, lab, instructor, course, other_course, sleep_template
):
    theirs = JobTemplate.objects.create(name="Theirs", slug="theirs", body="echo hi", parameters=[])
    theirs.courses.add(other_course)
    client.force_login(instructor)
    for said, text in hostile_files().items():
        page = client.post(reverse("labs:import", args=[course.slug]), {"text": text})
        html = page.content.decode().replace("&#x27;", "'").replace("&quot;", '"')
        assert page.status_code == 400 and said in html, (said, html[html.find("error-summary") :][:800])
    assert list(Lab.objects.filter(course=course).values_list("slug", flat=True)) == ["warm-up"]
    assert not theirs.courses.filter(pk=course.pk).exists()


def test_a_lab_file_names_where_each_problem_is(course, sleep_template):
    definition = lab_definition(check={"kind": "figure", "figure": "gpu_util", "bound": "at_least", "value": "nan"})
    with pytest.raises(lab_files.LabFileInvalid) as refused:
        load_lab(course, definition)
    assert refused.value.problems == ["Section 1 “Start”, step 1 “Say the word”, check, value: Enter a finite number."]


def test_a_lab_file_is_uploaded_as_a_file_too(client, instructor, course, sleep_template, cluster):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(instructor)
    upload = SimpleUploadedFile("warm-up.yaml", lab_files.dump(lab_definition()).encode(), "application/yaml")
    client.post(reverse("labs:import", args=[course.slug]), {"file": upload})
    assert Lab.objects.get(course=course, slug="warm-up").sections.count() == 2
    empty = client.post(reverse("labs:import", args=[course.slug]), {})
    assert empty.status_code == 400 and "Choose a lab file or paste one" in empty.content.decode()


def test_the_lab_list_offers_a_new_lab_to_instructors_only(client, course, instructor, ta):
    client.force_login(instructor)
    page = client.get(reverse("labs:list", args=[course.slug])).content.decode()
    assert 'id="new-lab"' in page and "Write one, start from a built-in lab, or import a lab file" in page
    client.force_login(ta)
    assert 'id="new-lab"' not in client.get(reverse("labs:list", args=[course.slug])).content.decode()


def test_sections_and_steps_close_ranks_after_a_removal(lab):
    from labs import editing

    section = lab.sections.get(position=1)
    for title in ("Two", "Three"):
        editing.add_step(section, {"title": title, "instructions": "", "template": None, "preset": {}, "fixed": [],
                                   "check_spec": {}, "quick_fixes": []})  # fmt: skip
    editing.remove_step(section.steps.get(position=1))
    assert list(section.steps.values_list("title", "position")) == [("Two", 1), ("Three", 2)]
    assert not editing.move(section.steps.get(position=2), 1)  # already last
    assert Section.objects.filter(lab=lab).count() == 2


# -- The API ---------------------------------------------------------------------------------------------------------


def test_the_api_shows_a_choices_correct_answer_to_teachers_only(api_for, lab, alice, ta, instructor):
    path = f"/api/v1/courses/{lab.course.slug}/labs/{lab.slug}/"
    for user, sees in ((alice, False), (ta, True), (instructor, True)):
        check = api_for(user).get(path).json()["sections"][1]["steps"][0]["check"]
        assert ("correct" in check) is sees and check["choices"] == ["A", "B"]


def test_the_api_gives_instructors_the_lab_file_and_imports_one(api_for, lab, instructor, ta, alice, course):
    path = f"/api/v1/courses/{course.slug}/labs/"
    definition = api_for(instructor).get(f"{path}{lab.slug}/file/").json()
    assert definition == lab_files.definition_of(lab)
    assert api_for(ta).get(f"{path}{lab.slug}/file/").status_code == 403
    assert api_for(alice).get(f"{path}{lab.slug}/file/").status_code == 404
    assert api_for(ta).post(path, definition, format="json").status_code == 403
    made = api_for(instructor).post(path, definition, format="json")
    assert made.status_code == 201 and made.json()["slug"] == "warm-up-2"
    copy = Lab.objects.get(course=course, slug="warm-up-2")
    assert lab_files.definition_of(copy) == {**definition, "slug": "warm-up-2"}
    definition["sections"][0]["steps"][0]["check"] = {"kind": "log", "pattern": ".*"}
    refused = api_for(instructor).post(path, definition, format="json")
    assert refused.status_code == 400 and "looks like a regular expression" in refused.json()["problems"][0]
    assert refused.json()["problems"][0].startswith("Section 1 “Start”, step 1 “Say the word”, check, pattern:")
    assert Lab.objects.filter(course=course).count() == 2


def test_the_editor_counts_progress_by_step_in_the_same_queries_however_big_the_class(
    client, lab, instructor, alice, bob, make_job, sleep_template
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from labs import editing

    client.force_login(instructor)
    with CaptureQueriesContext(connection) as small:
        client.get(url("edit", lab))
    section = lab.sections.get(position=1)
    for n in range(3):
        editing.add_step(section, {"title": f"Run {n}", "instructions": "", "template": sleep_template, "preset": {},
                                   "fixed": [], "check_spec": {}, "quick_fixes": []})  # fmt: skip
    make_job(alice, message="lab-word-42")
    make_job(bob, message="another-word")
    Answer.objects.create(step=Step.objects.get(section__lab=lab, title="Which?"), student=bob, text="A")
    with CaptureQueriesContext(connection) as big:
        page = client.get(url("edit", lab)).content.decode()
    assert len(big.captured_queries) == len(small.captured_queries)
    said = Step.objects.get(section__lab=lab, title="Say the word")
    assert "1 with progress" in page.split(f'id="step-{said.pk}"', 1)[1].split("</li>")[0]  # alice's run keeps message
    assert page.count("2 with progress") == 3  # the new steps fix nothing: both runs count


def test_the_admin_checks_a_preset_against_the_steps_template_too(client, admin_user, lab):
    step = Step.objects.get(section__lab=lab, title="Say the word")
    client.force_login(admin_user)
    data = {"section": step.section_id, "position": 1, "title": "x", "instructions": "", "template": step.template_id}
    data |= {"preset": '{"seconds": 9000}', "fixed": "[]", "quick_fixes": "[]", "check_spec": "{}"}
    answer = client.post(reverse("admin:labs_step_change", args=[step.pk]), data)
    assert answer.status_code == 200 and "Must be at most 600" in answer.content.decode()
    step.refresh_from_db()
    assert step.preset == {"message": "lab-word-42", "exit_code": 0}
