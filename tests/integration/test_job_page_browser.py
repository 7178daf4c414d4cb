"""Chromium on the real stack: the launch form's errors where they belong, a training job's progress and time in the
viewer's zone, and a cancel that asks first and then says who stopped the job.

Screenshots go to $GPULAB_SCREENSHOT_DIR (default /tmp/gpulab-shots), at laptop and phone widths.
"""

import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from core import measurements
from core.choices import JobState
from jobs import enqueue
from jobs.models import Job, JobTemplate, KeptLog
from jobs.states import transition

from . import made_up
from .test_browser import log_in

pytestmark = pytest.mark.browser
SHOTS = Path(os.environ.get("GPULAB_SCREENSHOT_DIR", "/tmp/gpulab-shots"))
WIDTHS = {"laptop": (1280, 800), "phone": (390, 844)}
SHOTS.mkdir(parents=True, exist_ok=True)

TRAINER_BODY = (
    "for i in 1 2 3 4 5 6 7 8; do\n"
    '  echo "epoch=0 step=$((i * 10)) loss=$((9 - i)).25 tok/s=$((1000 + i)).5 step_ms=500.0"\n'
    "  sleep 1\n"
    "done\n"
    "sleep 300\n"
)
TRAINER_PARAMS = [
    {"name": "gpus_per_node", "type": "int", "label": "GPUs", "default": 0, "min": 0, "max": 0},  # no wait for GPUs
    {"name": "time_minutes", "type": "int", "label": "Time limit (minutes)", "default": 10, "min": 1, "max": 10},
    {"name": "max_steps", "type": "int", "label": "Max steps", "default": 200, "min": 10, "max": 1000},
]


def _page(chromium, size: str, **options):
    width, height = WIDTHS[size]
    return chromium.new_context(viewport={"width": width, "height": height}, **options).new_page()


def _no_horizontal_scroll(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "the page scrolls sideways"


@pytest.fixture
def unsent_job(make_job, monkeypatch):
    """Jobs the test moves by hand to a made-up scheduler id: their submit message is never sent, so a worker an
    earlier test left running never submits them for real (a real submission would move them under the test)."""
    monkeypatch.setattr(enqueue, "submit", lambda job_id: None)
    return make_job


@pytest.fixture
def trainer_template(transactional_db, course):
    template = JobTemplate.objects.create(
        name="Trainer lines",
        slug="trainer-lines",
        body=TRAINER_BODY,
        parameters=TRAINER_PARAMS,
        status=JobTemplate.Status.PUBLISHED,
        max_gpus=0,
        max_minutes=10,
    )
    template.courses.add(course)
    return template


@pytest.mark.timeout(120)
@pytest.mark.parametrize("size", WIDTHS)
def test_launch_form_errors_are_in_their_fields_and_the_summary_takes_focus(
    chromium, live_server, alice, cluster, sleep_template, course, size
):
    page = _page(chromium, size)
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/courses/{course.slug}/launch/{sleep_template.slug}/")
    columns = page.eval_on_selector_all(".field", "blocks => blocks.map(b => b.getBoundingClientRect().x)")
    page.fill("#id_param_seconds", "9999")
    page.fill("#id_param_time_minutes", "99")
    page.click("#launch")

    expect(page.locator("#error-summary")).to_be_focused()
    for name in ("param_seconds", "param_time_minutes"):
        # The message is part of its own field's block (DOM), and drawn inside that block (layout).
        error = page.locator(f"#field-{name} > #id_{name}_error")
        expect(error).to_have_count(1)
        block, box = page.locator(f"#field-{name}").bounding_box(), error.bounding_box()
        assert block["x"] <= box["x"] and box["x"] + box["width"] <= block["x"] + block["width"] + 1
        assert block["y"] <= box["y"] and box["y"] + box["height"] <= block["y"] + block["height"] + 1
    assert page.locator(".field-grid > .errorlist, .field-grid > ul").count() == 0  # no error as a grid cell
    # Errors did not move a field to another column.
    assert page.eval_on_selector_all(".field", "blocks => blocks.map(b => b.getBoundingClientRect().x)") == columns
    page.click("#error-summary a[href='#id_param_seconds']")
    expect(page.locator("#id_param_seconds")).to_be_focused()
    _no_horizontal_scroll(page)
    page.locator("#error-summary").scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / f"launch-errors-{size}.png", full_page=True)


@pytest.mark.timeout(120)
def test_quota_refusal_is_shown_once_at_the_top_and_the_fields_stay_in_place(
    chromium, live_server, alice, cluster, sleep_template, course
):
    course.max_concurrent_jobs = 0
    course.save()
    page = _page(chromium, "laptop")
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/courses/{course.slug}/launch/{sleep_template.slug}/")
    columns = page.eval_on_selector_all(".field", "blocks => blocks.map(b => b.getBoundingClientRect().x)")
    page.click("#launch")
    expect(page.locator("#error-summary")).to_be_focused()
    expect(page.locator("#form-refusal")).to_contain_text("the course allows 0 at a time")
    assert page.content().count("the course allows 0 at a time") == 1
    assert page.eval_on_selector_all(".field", "blocks => blocks.map(b => b.getBoundingClientRect().x)") == columns
    page.screenshot(path=SHOTS / "launch-quota-refusal-laptop.png", full_page=True)
    assert not Job.objects.exists()


@pytest.mark.timeout(120)
def test_state_changes_are_announced_once_in_a_live_region(chromium, live_server, alice, unsent_job):
    job = unsent_job(alice)
    transition(job, JobState.SUBMITTING)
    transition(job, JobState.RUNNING, scheduler_id=made_up.scheduler_id())
    page = _page(chromium, "laptop")
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "running")
    expect(page.locator("#job-announce")).to_have_text("")  # the state the page opened on is not news
    transition(job, JobState.FAILED, exit_code=3, error="The job ended with exit code 3 (FAILED). The log shows why.")
    expect(page.locator("#job-announce")).to_have_text(
        "The job is now Failed. The job ended with exit code 3 (FAILED). The log shows why.", timeout=15_000
    )


@pytest.mark.timeout(300)
def test_training_job_page_shows_progress_asks_before_cancel_and_says_who_cancelled(
    chromium, worker, collector, web, api_for, alice, cluster, trainer_template, job_state
):
    response = api_for(alice).post("/api/v1/jobs/", {"template": "trainer-lines", "cluster": "local"}, format="json")
    job = job_state(Job.objects.get(pk=response.json()["id"]), "running", timeout=150)
    page = _page(chromium, "laptop", timezone_id="America/New_York", locale="en-US")
    log_in(page, web, "alice")
    page.goto(f"{web.url}/jobs/{job.pk}/")
    assert page.get_attribute("#log", "aria-live") is None  # the log is not read out line by line

    # Step N of max_steps from the trainer's lines (parsed by the collector), an ETA from step_ms, time left.
    expect(page.locator("#step")).to_contain_text("step 80 of 200", timeout=60_000)
    expect(page.locator("#step")).to_contain_text("about 1 min to go")  # 120 steps at 500 ms
    expect(page.locator("#step-progress")).to_have_attribute("value", "40")
    expect(page.locator("#time-left")).to_contain_text(re.compile(r"^(9|10) min"))
    # Times in the viewer's zone, named: the start in New York time (EST), as this browser is set.
    started = page.locator("#job-status time[data-local-time=datetime]").nth(1)
    expect(started).to_contain_text("EST")
    expect(started).to_have_attribute("title", "Your time zone: America/New_York")
    _no_horizontal_scroll(page)
    page.screenshot(path=SHOTS / "job-progress-laptop.png", full_page=True)
    phone = _page(chromium, "phone", timezone_id="America/New_York", locale="en-US")
    log_in(phone, web, "alice")
    phone.goto(f"{web.url}/jobs/{job.pk}/")
    expect(phone.locator("#step")).to_contain_text("of 200")
    _no_horizontal_scroll(phone)
    phone.screenshot(path=SHOTS / "job-progress-phone.png", full_page=True)
    phone.screenshot(path=SHOTS / "job-progress-phone-top.png")  # what a phone shows first, at readable scale

    # Cancel asks first, saying what stops; Escape keeps the job.
    page.click("#cancel")
    dialog = page.locator("#cancel-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text(re.compile(r"Stop training\? It has run \d+ s and reached step 80 of 200\."))
    expect(page.locator("#keep-running")).to_be_focused()
    page.screenshot(path=SHOTS / "job-cancel-dialog-laptop.png")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert Job.objects.get(pk=job.pk).cancel_requested_at is None

    page.click("#cancel")
    page.click("#confirm-cancel")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "cancelled", timeout=60_000)
    expect(page.locator("#cancelled-by")).to_contain_text("Cancelled by alice at")
    job = job_state(job, "cancelled")
    if job.exit_code in (143, 137):  # the batch shell ends on the scheduler's signal: said as the cancel's doing
        expect(page.locator("#job-status")).to_contain_text("the cancel stopped it, as expected")
    expect(page.locator("#job-error")).to_have_count(0)
    page.screenshot(path=SHOTS / "job-cancelled-laptop.png", full_page=True)


@pytest.mark.timeout(120)
def test_without_javascript_cancel_leads_to_a_confirm_page(chromium, live_server, alice, unsent_job):
    job = unsent_job(alice)
    transition(job, JobState.SUBMITTING)
    transition(job, JobState.RUNNING, scheduler_id=made_up.scheduler_id())
    page = _page(chromium, "phone", java_script_enabled=False)
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    page.click("#cancel")
    expect(page).to_have_url(f"{live_server.url}/jobs/{job.pk}/cancel/")
    expect(page.locator("#cancel-question")).to_contain_text("Stop this job? It has run")
    page.screenshot(path=SHOTS / "job-cancel-confirm-page-phone.png", full_page=True)
    page.click("#keep-running")
    expect(page).to_have_url(f"{live_server.url}/jobs/{job.pk}/")
    assert Job.objects.get(pk=job.pk).cancel_requested_at is None
    page.click("#cancel")
    page.click("#confirm-cancel")
    expect(page.locator("#cancelling")).to_be_visible()
    assert Job.objects.get(pk=job.pk).cancel_requested_at is not None


@pytest.mark.timeout(120)
@pytest.mark.parametrize("size", WIDTHS)
def test_builtin_training_form_explains_every_parameter_and_shows_fixed_gpus_as_text(
    chromium, live_server, alice, cluster, course, size
):
    from jobs.builtin import load_builtin_templates

    load_builtin_templates([course])
    page = _page(chromium, size)
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/courses/{course.slug}/launch/tiny-lm-single/")
    expect(page.locator("#id_param_gpus_per_node")).to_have_text(re.compile(r"^1 \(set by this template\)"))
    assert page.locator("input[name=param_gpus_per_node]").count() == 0
    for block in page.locator(".field").all():
        assert block.locator(".helptext").inner_text().strip(), block.inner_html()[:200]
    expect(page.locator("#field-param_max_steps .helptext")).to_contain_text("From 10 to 100000.")
    expect(page.locator("#quota-use")).to_have_text("You are using 0 of 4 jobs, 0 of 4 GPUs.")
    _no_horizontal_scroll(page)
    page.screenshot(path=SHOTS / f"launch-tiny-lm-{size}.png", full_page=True)


# Records every change to the state panel's card and timeline, their replacement included.
WATCH_PANEL = """() => {
  window.panelChanges = [];
  for (const id of ['job-status', 'job-timeline']) {
    const el = document.getElementById(id);
    const note = (records) => window.panelChanges.push(...records.map((r) => `${id}: ${r.type}`));
    new MutationObserver(note).observe(el, { subtree: true, childList: true, characterData: true, attributes: true });
    new MutationObserver(note).observe(el.parentElement, { childList: true });
  }
}"""


@pytest.mark.timeout(120)
def test_open_job_page_swaps_nothing_until_the_state_changes_then_shows_it_without_reload(
    chromium, live_server, alice, unsent_job
):
    job = unsent_job(alice)
    transition(job, JobState.SUBMITTING)
    transition(job, JobState.RUNNING, scheduler_id=made_up.scheduler_id())
    # Five minutes and ten seconds in: the "Running for 5 min" the page shows holds for the next 50 s.
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(minutes=5, seconds=10))
    # No earlier run's "last heard" for this cluster: a silent cluster's notice counts its seconds, a real change.
    measurements.client().hdel(f"{measurements.PREFIX}heard", job.cluster.name)
    page = _page(chromium, "laptop")
    log_in(page, live_server, "alice")
    polls = []
    page.on("response", lambda r: polls.append(r.status) if "/status/" in r.url else None)
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    expect(page.locator("#elapsed")).to_have_text("5 min")
    page.evaluate(WATCH_PANEL)
    page.wait_for_timeout(7000)
    assert len(polls) >= 2 and set(polls) == {204}, polls  # asked every 3 s; nothing had changed
    assert page.evaluate("window.panelChanges") == []  # so nothing was swapped or touched

    transition(job, JobState.COMPLETED, exit_code=0)
    expect(page.locator("#job-state")).to_have_attribute("data-state", "completed", timeout=10_000)
    expect(page.locator("#job-timeline")).to_contain_text("Completed")
    expect(page.locator("#elapsed")).to_have_text("5 min")  # "Ran for", as it ended
    expect(page.locator("#exit-code")).to_have_text("0")
    # Nothing on the page still claims to be live: the telemetry and log headings say what they now hold.
    expect(page.locator("[data-socket-state]")).to_have_text("recorded")
    expect(page.locator("[data-telemetry='job'] h2")).not_to_contain_text("Live")
    expect(page.locator("#log-mode")).to_have_text("as it ended")
    assert page.evaluate("window.panelChanges")  # the card and the timeline came in
    asked = len(polls)
    page.wait_for_timeout(4000)
    assert len(polls) == asked  # an ended job's page stops asking
    page.screenshot(path=SHOTS / "job-completed-without-reload-laptop.png", full_page=True)


FAILED_LOG = (
    "".join(f"epoch=0 step={s} loss=2.5 tok/s=1000.0 step_ms=10.0 total_steps=300\n" for s in range(10, 410, 10))
    + "Traceback (most recent call last):\n"
    + '  File "/lab/trainer/train.py", line 96, in <module>\n'
    + "    sys.exit(main())\n"
    + '  File "/lab/trainer/data.py", line 15, in read_bytes\n'
    + "    raw = path.read_bytes()\n"
    + "FileNotFoundError: [Errno 2] No such file or directory: '/lab/files/corpus.txt'\n"
    + "srun: error: vm: task 0: Exited with exit code 1\n"
)


def _ended_with_kept_log(job, state, text: str, **fields):
    """The job ends as `state`; its log is the copy the portal keeps (the made-up scheduler id has none on the
    cluster, so the page reads the kept copy, as it does once the cluster's scratch is cleaned)."""
    KeptLog.objects.create(job=job, data=text)
    transition(job, state, **fields)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("size", WIDTHS)
def test_failed_jobs_page_shows_the_tracebacks_last_lines_and_opens_the_log_at_the_traceback(
    chromium, live_server, alice, unsent_job, size
):
    job = unsent_job(alice)
    transition(job, JobState.SUBMITTING)
    transition(job, JobState.RUNNING, scheduler_id=made_up.scheduler_id())
    error = "The job ended with exit code 1 (FAILED). The log shows why."
    _ended_with_kept_log(job, JobState.FAILED, FAILED_LOG, exit_code=1, error=error)
    page = _page(chromium, size)
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    box = page.locator("#log-error")
    expect(box).to_contain_text("Where it failed")
    expect(box).to_contain_text("FileNotFoundError: [Errno 2] No such file or directory: '/lab/files/corpus.txt'")
    expect(box).to_contain_text("raw = path.read_bytes()")
    expect(box).not_to_contain_text("srun: error")  # the exception is the traceback's last line
    # The log opens at the traceback, not at its first line: the traceback's first line is in the log's view.
    in_view = """() => {
      const pre = document.getElementById('log'), node = pre.firstChild, at = node.data.indexOf('Traceback');
      const range = document.createRange(); range.setStart(node, at); range.setEnd(node, at + 9);
      const line = range.getBoundingClientRect(), box = pre.getBoundingClientRect();
      return pre.scrollTop > 0 && line.top >= box.top && line.bottom <= box.bottom;
    }"""
    page.wait_for_function(in_view, timeout=5_000)
    _no_horizontal_scroll(page)
    page.locator("#log-error").scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / f"job-failed-traceback-{size}.png")


@pytest.mark.timeout(120)
def test_failed_job_without_a_traceback_shows_the_logs_last_lines_and_opens_it_at_the_end(
    chromium, live_server, alice, unsent_job
):
    job = unsent_job(alice)
    transition(job, JobState.SUBMITTING)
    transition(job, JobState.RUNNING, scheduler_id=made_up.scheduler_id())
    text = "".join(f"line {n}\n" for n in range(200)) + "bash: train.sh: No such file or directory\n"
    _ended_with_kept_log(job, JobState.FAILED, text, exit_code=127, error="The job ended with exit code 127.")
    page = _page(chromium, "laptop")
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    expect(page.locator("#log-error")).to_contain_text("The log's last lines")
    expect(page.locator("#log-error")).to_contain_text("bash: train.sh: No such file or directory")
    at_end = (
        "() => { const p = document.getElementById('log'); return p.scrollTop + p.clientHeight >= p.scrollHeight - 2; }"
    )
    page.wait_for_function(at_end, timeout=5_000)


@pytest.mark.timeout(120)
def test_a_job_that_ends_while_its_page_is_open_shows_its_log_with_the_new_state(
    chromium, live_server, alice, unsent_job
):
    job = unsent_job(alice)
    transition(job, JobState.SUBMITTING)
    transition(job, JobState.RUNNING, scheduler_id=made_up.scheduler_id())
    page = _page(chromium, "laptop")
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "running")
    page.wait_for_timeout(1000)  # the page has read the (still empty) log once
    _ended_with_kept_log(job, JobState.COMPLETED, "hello from a short job\ndone\n", exit_code=0)
    expect(page.locator("#job-state")).to_have_attribute("data-state", "completed", timeout=10_000)
    # With the state, not at the log's next idle check (10 s of silence) later.
    expect(page.locator("#log")).to_contain_text("hello from a short job", timeout=2_000)
    expect(page.locator("#log-status")).to_have_text("End of log.")
    expect(page.locator("#log-error")).to_have_count(0)  # not a failure
