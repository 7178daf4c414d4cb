"""The lab editor in Chromium, as an instructor meets it: add a step to a lab, watch its Markdown preview (inert), pick
its template (its values appear without a save), set a log check and a quick fix, save, and see the step on the
student's lab page; the editor's pages fit a 390 px phone."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from labs.builtin import load_lab
from labs.models import Answer, Step
from tests.test_labs import lab_definition

from .test_pages_browser import no_sideways_scroll, signed_in

pytestmark = pytest.mark.browser
SHOTS = os.path.join(os.environ.get("GPULAB_SHOTS", "/tmp/gpulab-shots"), "lab-editor")

INSTRUCTIONS = """\
## Run the echo

Launch it, then look for **your word** in the log.

<script>document.title = "owned"</script>

```bash
grep lab-word-7 output.log
```
"""


@pytest.mark.timeout(180)
def test_an_instructor_adds_a_step_that_students_then_see(
    live_server, browser, instructor, alice, course, cluster, sleep_template
):
    os.makedirs(SHOTS, exist_ok=True)
    lab = load_lab(course, lab_definition())
    editor = f"{live_server.url}/courses/{course.slug}/labs/{lab.slug}/edit/"
    page = signed_in(browser, live_server, "ines", 1280)
    page.goto(editor)
    page.screenshot(path=f"{SHOTS}/editor-1280.png", full_page=True)
    page.locator(f"#section-{lab.sections.get(position=1).pk} a.add-step").click()

    page.fill("#id_title", "Echo your word")
    page.fill("#id_instructions", INSTRUCTIONS)  # the live preview follows the text (htmx)
    expect(page.locator("#instructions-preview h2")).to_have_text("Run the echo")
    page.click("#preview-button")
    expect(page.locator("#instructions-preview pre code")).to_contain_text("grep lab-word-7")
    expect(page.locator("#instructions-preview")).to_contain_text("<script>")  # shown as text, never run
    assert page.locator("#instructions-preview script").count() == 0 and page.title() != "owned"

    page.select_option("#id_template", "sleep-echo")  # its values appear, nothing saved yet
    expect(page.locator("#id_p_message")).to_be_visible()
    page.fill("#id_p_message", "lab-word-7")
    page.check("#id_fix_message")
    expect(page.locator("#id_pattern")).to_be_hidden()  # only the chosen kind's fields show
    page.select_option("#id_check_kind", "log")
    page.fill("#id_pattern", "lab-word-7")
    page.check("#id_fix-0-states input[value=failed]")
    page.fill("#id_fix-0-text", "It exited with an error: launch it again with exit code 0.")
    page.screenshot(path=f"{SHOTS}/step-form-1280.png", full_page=True)
    page.click("#save-step")
    expect(page.locator(".flash.success")).to_contain_text("Saved the step “Echo your word”")
    step = Step.objects.get(title="Echo your word")
    assert step.preset == {"message": "lab-word-7"} and step.fixed == ["message"]
    expect(page.locator(f"#step-{step.pk}")).to_contain_text("its log holds “lab-word-7”")

    student = signed_in(browser, live_server, "alice", 390)
    student.goto(f"{live_server.url}/courses/{course.slug}/labs/{lab.slug}/")
    card = student.locator(f"#step-{step.pk}")
    expect(card.locator("h2, h3").first).to_contain_text("Echo your word")
    expect(card.locator(".lab-md h2")).to_have_text("Run the echo")
    expect(card.locator(".step-launch")).to_contain_text("Launch Sleep and echo")
    expect(card).to_contain_text("with message=lab-word-7 set by this step")
    assert student.title() != "owned"

    which = Step.objects.get(section__lab=lab, title="Which?")
    Answer.objects.create(step=which, student=alice, text="B", accepted=True)
    phone = signed_in(browser, live_server, "ines", 390)
    for name, path in (
        ("editor", editor),
        ("step-form", f"{editor}steps/{step.pk}/"),
        ("remove-step-with-progress", f"{editor}steps/{which.pk}/remove/"),
        ("new-lab", f"{live_server.url}/courses/{course.slug}/labs/new/"),
    ):
        phone.goto(path)
        phone.screenshot(path=f"{SHOTS}/{name}-390.png", full_page=True)
        no_sideways_scroll(phone)
    expect(phone.locator("#progress-warning")).to_have_count(0)  # the last page: a new lab
    phone.goto(f"{editor}steps/{which.pk}/remove/")
    expect(phone.locator("#progress-warning")).to_contain_text("1 student has progress on this step (1 done)")
    phone.goto(f"{editor}steps/{step.pk}/")
    phone.select_option("#id_check_kind", "figure")
    phone.screenshot(path=f"{SHOTS}/step-form-figure-390.png", full_page=True)
    no_sideways_scroll(phone)
