"""The class dashboard in Chromium with a full class: 60 students holding 2 GPUs each, their frames published
through the real path (Redis ring and channel layer) to the ASGI server, read by the page's WebSocket."""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import time
from datetime import timedelta

import pytest
import redis
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from courses.models import Enrollment, Role
from jobs.models import Job
from telemetry.models import SeriesChunk
from telemetry.stream import KEY_PREFIX, Publisher, course_group
from telemetry.wire import CourseFrame, CourseRow

from .test_browser import log_in
from .test_pages_browser import no_sideways_scroll

pytestmark = pytest.mark.browser

STUDENTS = 60
IDLE = {7, 23, 41}  # these students' GPUs sit at 0 % and have for 400 s
MARKUP = "<b>Student</b>"
SHOTS = os.environ.get("GPULAB_SHOTS", "/tmp/gpulab-shots")


def open_page(browser, width: int):
    return browser.new_context(viewport={"width": width, "height": 900}).new_page()


@pytest.fixture
def full_class(course, cluster, sleep_template):
    """60 enrolled students, each running one 2-GPU job: what the page labels and what the frames name."""
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"student{i}", first_name="Student", last_name=f"No. {i}") for i in range(STUDENTS)]
    )
    users[-1].first_name = MARKUP  # a roster name is text, never markup
    users[-1].save()
    Enrollment.objects.bulk_create([Enrollment(course=course, user=u, role=Role.STUDENT) for u in users])
    jobs = Job.objects.bulk_create(
        [Job(owner=u, course=course, cluster=cluster, template=sleep_template, state="running", gpus=2) for u in users]
    )
    return list(zip(users, jobs, strict=True))


def open_full_dashboard(page, web, course):
    """The instructor's dashboard, once its heatmap has a row for every student; returns the heatmap."""
    log_in(page, web, "ines")
    page.goto(f"{web.url}/courses/{course.slug}/dashboard/")
    heatmap = page.locator("[data-chart=heatmap]")
    expect(heatmap).to_have_attribute("data-rows", str(STUDENTS), timeout=30_000)
    return heatmap


def course_frame(
    students, t_ms: int, idle_students=IDLE, shift: float = 0.0, ended=frozenset(), simulated: bool = False
) -> CourseFrame:
    rows = []
    for i, (user, job) in enumerate(students):
        if i in ended:  # the job ended: the collector sends its GPUs no more
            continue
        for gpu in (0, 1):
            idle = i in idle_students
            util = 0.0 if idle else 40.0 + (i * 7 + gpu * 13) % 60 - shift
            rows.append(CourseRow(user.username, str(job.pk), f"node{i % 8}/{gpu}", util, 30.0, False,
                                  400 if idle else 0, simulated))  # fmt: skip
    return CourseFrame(rows, t_ms)


class Feed:
    """Publishes the class's frames: five minutes of history into the ring, then one live frame a second."""

    def __init__(self, course, students):
        self.group = course_group(course.pk)
        self.students = students
        self.idle = set(IDLE)  # a test may send another student idle while the page is open
        self.shift = 0.0  # or lower every busy GPU's utilization by this much
        self.ended: set[int] = set()  # or end these students' jobs
        self.simulated = False  # or say the GPUs are the demo's stand-in
        self.stop = threading.Event()
        client = redis.Redis.from_url(os.environ["REDIS_URL"])
        for key in client.scan_iter(f"{KEY_PREFIX}:*{self.group}"):
            client.delete(key)  # ids repeat between test sessions

    def run(self) -> None:
        async def feed():
            publisher = Publisher()
            roster = None  # as the collector does: a frame names its GPUs only when they changed

            async def publish(frame: CourseFrame, t: int) -> None:
                nonlocal roster
                await publisher.publish({self.group: frame.to_wire(with_roster=frame.roster != roster)}, now_ms=t)
                roster = frame.roster

            now = int(time.time() * 1000)
            for t in range(now - 295_000, now, 5000):
                await publish(course_frame(self.students, t), t)
            while not self.stop.is_set():
                t = int(time.time() * 1000)
                await publish(course_frame(self.students, t, self.idle, self.shift, self.ended, self.simulated), t)
                await asyncio.sleep(1)
            await publisher.close()

        asyncio.run(feed())

    def __enter__(self):
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)


@pytest.mark.timeout(180)
def test_sixty_students_get_one_labelled_row_each_with_the_idle_first(web, browser, instructor, course, full_class):
    page = open_page(browser, 1280)
    log_in(page, web, "ines")
    heatmap = page.locator("[data-chart=heatmap]")
    with Feed(course, full_class):
        page.goto(f"{web.url}/courses/{course.slug}/dashboard/")
        expect(heatmap).to_have_attribute("data-rows", str(STUDENTS), timeout=30_000)
        labels = page.locator("[data-chart=heatmap] .heat-label")
        ticks = labels.all_text_contents()
        assert len(ticks) == STUDENTS
        assert all(f"Student No. {i} · 2 GPUs" in " ".join(ticks) for i in range(STUDENTS - 1))
        assert f"{MARKUP} No. {STUDENTS - 1} · 2 GPUs" in " ".join(ticks)  # the tags shown as written
        # The idle three come first, whatever their place in the roster.
        assert {tick.split("No. ")[1].split(" ")[0] for tick in ticks[:3]} == {str(i) for i in IDLE}
        # A quarter-minute ago: the newest column may still be filling.
        hover = page.evaluate("document.querySelector('[data-chart=heatmap]').heatmap.cellText(0, 57)")
        assert hover.startswith("Student No. ") and "· sleep-echo " in hover and " % at " in hover
        assert "mean GPU util of 2 GPUs 0 %" in hover
        # Three minutes ago: a column only the socket's first message (the heat) can fill.
        earlier = page.evaluate("document.querySelector('[data-chart=heatmap]').heatmap.cellText(0, 20)")
        assert "mean GPU util of 2 GPUs 0 %" in earlier

        # Every row's label is drawn, none on top of another: the chart grows with the class.
        tops = page.evaluate(
            "[...document.querySelectorAll('[data-chart=heatmap] .heat-label')]"
            ".map((t) => t.getBoundingClientRect().top).sort((a, b) => a - b)"
        )
        assert len(tops) == STUDENTS
        assert min(b - a for a, b in itertools.pairwise(tops)) >= 12

        idle_now = page.locator("[data-idle-now] li")
        expect(idle_now).to_have_count(len(IDLE))
        expect(idle_now.first).to_contain_text("2 of 2 GPUs idle for 7 min")

        # Hovering a cell names the student, the job and the unit.
        cells = page.locator("[data-chart=heatmap] .heat-cells").bounding_box()
        page.mouse.move(cells["x"] + cells["width"] * 0.6, cells["y"] + 60)
        expect(page.locator("[data-chart=heatmap] .heat-tip")).to_contain_text("GPU util")
        page.screenshot(path=f"{SHOTS}/dashboard-60-students-1280.png", full_page=True)

        # A click on a student's cells opens their row into one row per GPU; "One row per student" closes them
        # again; the row's label is a button that does the same from the keyboard.
        first = ticks[0].split(" · ")[0].lstrip("▸ ")
        page.mouse.move(cells["x"] + cells["width"] / 2, cells["y"] + 11, steps=5)
        expect(page.locator("[data-chart=heatmap] .heat-tip")).to_contain_text(first)
        page.mouse.click(cells["x"] + cells["width"] / 2, cells["y"] + 11)
        expect(labels).to_have_count(62)
        ticks = labels.all_text_contents()
        assert "GPU node" in ticks[1] and "sleep-echo" in ticks[1]
        page.click("[data-collapse-all]")
        expect(labels).to_have_count(STUDENTS)
        labels.first.focus()
        page.keyboard.press("Enter")
        expect(labels).to_have_count(62)
        expect(labels.first).to_have_attribute("aria-expanded", "true")

        phone = open_page(browser, 390)
        log_in(phone, web, "ines")
        phone.goto(f"{web.url}/courses/{course.slug}/dashboard/")
        expect(phone.locator("[data-chart=heatmap]")).to_have_attribute("data-rows", str(STUDENTS), timeout=30_000)
        phone.screenshot(path=f"{SHOTS}/dashboard-60-students-390.png", full_page=True)
        phone.locator("[data-chart=heatmap]").screenshot(path=f"{SHOTS}/dashboard-60-students-390-heatmap.png")
        assert phone.evaluate("document.scrollingElement.scrollWidth") <= 390
        # The time axis's clock times stand apart, each whole, on the phone's narrow column of cells.
        times = phone.locator("[data-chart=heatmap] .heat-times span")
        expect(times.first).not_to_have_text("")
        boxes = [times.nth(i).bounding_box() for i in range(times.count())]
        assert all(left["x"] + left["width"] < right["x"] for left, right in itertools.pairwise(boxes)), boxes
        assert phone.evaluate(
            "[...document.querySelectorAll('.heat-times span')].every(s => s.scrollWidth <= s.clientWidth)"
        )


@pytest.mark.timeout(120)
def test_a_class_with_no_gpus_in_use_says_so_instead_of_blank_axes(web, browser, instructor, course, alice):
    redis.Redis.from_url(os.environ["REDIS_URL"]).delete(f"{KEY_PREFIX}:heat:{course_group(course.pk)}")
    page = open_page(browser, 1280)
    log_in(page, web, "ines")
    page.goto(f"{web.url}/courses/{course.slug}/dashboard/")
    expect(page.locator("[data-heatmap-empty]")).to_have_text(
        "No GPUs in use right now. Students' GPUs appear here as soon as their jobs start."
    )
    page.wait_for_timeout(2000)  # the socket opened and brought no history: still the empty state, no axes
    expect(page.locator("[data-heatmap-empty]")).to_be_visible()
    expect(page.locator("[data-chart=heatmap]")).to_be_hidden()
    assert page.locator("[data-chart=heatmap] .heat-cells").count() == 0
    expect(page.locator("[data-idle-now]")).to_contain_text("No GPU has been idle")
    page.screenshot(path=f"{SHOTS}/dashboard-empty-1280.png", full_page=True)


@pytest.mark.timeout(120)
def test_a_class_whose_jobs_hold_no_gpus_reads_its_frames_without_asking_for_more(web, browser, instructor, course):
    """Jobs running on CPU nodes: the frames name an empty roster, which the page opened with, so it asks nothing."""
    group = course_group(course.pk)
    redis.Redis.from_url(os.environ["REDIS_URL"]).delete(f"{KEY_PREFIX}:heat:{group}")

    def publish(seconds: int, *, first: bool) -> None:  # in a thread of its own: Playwright's loop runs in this one
        async def frames():
            publisher = Publisher()
            for i in range(seconds):
                t = int(time.time() * 1000)
                named = first and i == 0  # as the collector: the roster once, when it is new
                await publisher.publish({group: CourseFrame([], t).to_wire(with_roster=named)}, now_ms=t)
                await asyncio.sleep(1)
            await publisher.close()

        thread = threading.Thread(target=asyncio.run, args=(frames(),))
        thread.start()
        thread.join()

    publish(2, first=True)  # the heat now names the empty roster
    page = open_page(browser, 1280)
    asked: list[str] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: asked.append(str(payload))))
    log_in(page, web, "ines")
    page.goto(f"{web.url}/courses/{course.slug}/dashboard/")
    expect(page.locator("[data-heatmap-empty]")).to_be_visible()
    publish(4, first=False)
    assert page.evaluate("document.querySelector('[data-chart=heatmap]').heatmap.roster") is not None
    assert asked == []  # no resync: every frame was readable
    expect(page.locator("[data-heatmap-empty]")).to_have_text(
        "No GPUs in use right now. Students' GPUs appear here as soon as their jobs start."
    )


# A resync's answer read before the frames the page has since drawn: another roster, an idle time and a value for
# every column. Returns what it changed of the newest frames' work.
LATE_HEAT = """() => {
  const heatmap = document.querySelector('[data-chart=heatmap]').heatmap;
  const [roster, offset, gpu] = [heatmap.roster, heatmap.offset, heatmap.columns[0]];
  const newest = Math.floor(gpu.seen / 5000) * 5000; // the newest frame's column
  const before = valueAt(gpu, newest), idle = gpu.idle;
  heatmap.load({ type: 'heat', seq: heatmap.readSeq - 3, t: newest - 600000, first: newest - 59 * 5000,
    bucket_ms: 5000, roster: 'an-older-roster', live: [gpu.key],
    gpus: [{ key: gpu.key, job: gpu.job, student: gpu.student, seen: newest - 600000, idle_s: 999, simulated: false,
             util: Array(60).fill(1) }] });
  return { roster: heatmap.roster === roster, offset: heatmap.offset === offset, idle: gpu.idle === idle,
           newest: valueAt(gpu, newest) === before, before };
}"""


def on_live_dashboard(browser, web, course, full_class, script: str):
    """What `script` returns on the instructor's dashboard of the full class, once two live frames have come."""
    page = open_page(browser, 1280)
    with Feed(course, full_class):
        open_full_dashboard(page, web, course)
        page.wait_for_function("document.querySelector('[data-chart=heatmap]').dataset.frames >= 2")
        return page.evaluate(script)


@pytest.mark.timeout(120)
def test_a_late_heat_fills_only_what_the_page_lacks(web, browser, instructor, course, full_class):
    kept = on_live_dashboard(browser, web, course, full_class, LATE_HEAT)
    assert kept["before"] is not None
    assert kept == {"roster": True, "offset": True, "idle": True, "newest": True, "before": kept["before"]}


# A page that lost a frame three minutes back (its cell empty, drawn so), then a resync's late heat with that cell:
# what the first row says of the column before the heat, and on the draw right after it (the same 5-s column).
HEAT_FILLS_A_GAP = """() => {
  const heatmap = document.querySelector('[data-chart=heatmap]').heatmap;
  heatmap.draw();
  const t = heatmap.times[20], gpus = heatmap.rows[0].gpus;
  for (const gpu of gpus) gpu.at[(t / 5000) % 60] = -1;
  heatmap.layout = '';
  heatmap.draw();
  const before = heatmap.cellText(0, 20);
  const util = Array(60).fill(null);
  util[20] = 42;
  heatmap.load({ type: 'heat', seq: heatmap.readSeq - 2, t: heatmap.times[59], first: heatmap.times[0],
    bucket_ms: 5000, roster: heatmap.roster, live: heatmap.columns.map((g) => g.key),
    gpus: gpus.map((g) => ({ key: g.key, job: g.job, student: g.student, seen: g.seen, idle_s: g.idle,
                             simulated: false, util })) });
  heatmap.draw();
  return { before, after: heatmap.cellText(0, 20), same: heatmap.times[20] === t };
}"""


@pytest.mark.timeout(120)
def test_a_cell_a_late_heat_fills_is_drawn_at_once_not_at_the_next_column(web, browser, instructor, course, full_class):
    seen = on_live_dashboard(browser, web, course, full_class, HEAT_FILLS_A_GAP)
    assert seen["same"], seen  # both draws in one column: only the heat can have filled it
    assert "no sample" in seen["before"], seen
    assert "mean GPU util of 2 GPUs 42 %" in seen["after"], seen


# Marks every row label (a JS property: the same element keeps it) and records what changes in the labels.
WATCH_LABELS = """() => {
  const labels = document.querySelector('[data-chart=heatmap] .heat-labels');
  [...labels.children].forEach((label, i) => { label.mark = i; });
  window.labelChanges = [];
  new MutationObserver((records) => {
    for (const r of records) {
      const nodes = [...r.addedNodes, ...r.removedNodes].map((n) => (n.nodeType === 1 ? n.textContent : '#text'));
      window.labelChanges.push({ type: r.type, target: r.target === labels ? 'labels' : r.target.textContent, nodes });
    }
  }).observe(labels, { subtree: true, childList: true, characterData: true, attributes: true });
}"""


@pytest.mark.timeout(180)
def test_redraws_touch_only_the_rows_that_changed(web, browser, instructor, course, full_class):
    page = open_page(browser, 1280)
    labels = page.locator("[data-chart=heatmap] .heat-label")
    with Feed(course, full_class) as feed:
        heatmap = open_full_dashboard(page, web, course)
        page.wait_for_timeout(1500)
        page.evaluate(WATCH_LABELS)
        frames = int(heatmap.get_attribute("data-frames"))
        page.wait_for_timeout(6500)  # six redraws at least, and a five-second column completed
        assert int(heatmap.get_attribute("data-frames")) >= frames + 5
        assert page.evaluate("window.labelChanges") == []  # nothing changed, so no label was touched
        assert page.evaluate("[...document.querySelectorAll('.heat-labels > *')].every((l, i) => l.mark === i)")

        # One student's GPUs go idle: their row moves up among the idle, the same element, and no other row is
        # built again or retitled.
        moved = 30  # a busy student in the middle of the rows (IDLE first, then the least busy: students 0, 9, …)
        assert moved not in IDLE and len(IDLE) < labels.all_text_contents().index(f"▸ Student No. {moved} · 2 GPUs")
        name = f"Student No. {moved} · 2 GPUs"
        feed.idle.add(moved)
        expect(page.locator("[data-idle-now] li")).to_have_count(len(IDLE) + 1, timeout=15_000)
        expect(labels.nth(len(IDLE))).to_contain_text(name, timeout=15_000)
        changes = page.evaluate("window.labelChanges")
        assert changes and all(c["type"] == "childList" and c["nodes"] == [f"▸ {name}"] for c in changes), changes
        marks = page.evaluate("[...document.querySelectorAll('.heat-labels > *')].map((l) => l.mark)")
        assert sorted(marks) == list(range(STUDENTS))  # every label is the element it was, none made anew
        page.screenshot(path=f"{SHOTS}/dashboard-one-row-moved-1280.png", full_page=True)

        # Most draws paint only the newest column: when every busy GPU's utilization drops, each cell on the canvas
        # shows its row's value, the newest column's included. Dropped early in a column, so the check comes before
        # the next one (whose draw paints every column).
        page.wait_for_function(
            "(() => { const into = document.querySelector('[data-chart=heatmap]').heatmap.serverNow() % 5000;"
            " return into > 200 && into < 1000; })()",
            polling=50,
        )
        feed.shift = 30.0
        page.wait_for_timeout(2800)
        wrong = page.evaluate(PAINTED_WRONG)
        assert wrong == [], wrong[:5]


# Cells whose colour on the canvas is not their value's: the middle pixel of every row's cell in a few columns.
PAINTED_WRONG = """() => {
  const heatmap = document.querySelector('[data-chart=heatmap]').heatmap;
  const canvas = heatmap.canvas, ratio = canvas.width / canvas.clientWidth;
  const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  const wrong = [];
  heatmap.rows.forEach((row, r) => {
    for (const c of [0, 30, 58, 59]) {
      const left = Math.round((c * heatmap.cellWidth) / 60), right = Math.round(((c + 1) * heatmap.cellWidth) / 60);
      const x = Math.floor(((left + right - 1) / 2) * ratio), y = Math.floor((r * 22 + 10) * ratio);
      const at = (y * canvas.width + x) * 4;
      const shown = [pixels[at], pixels[at + 1], pixels[at + 2]], expected = colour(row.values[c]);
      if (shown.join() !== expected.join()) wrong.push({ row: row.id, column: c, shown, expected });
    }
  });
  return wrong;
}"""


@pytest.mark.timeout(180)
def test_the_student_table_sorts_and_filters_sixty_students_in_the_page(
    web, browser, instructor, course, cluster, sleep_template, full_class
):
    """Sixty rows (the instructor has none), filtered by stuck, waiting, failed and the live idle flag, sorted by a
    header or, on a phone, the "Sort by" list: all without a reload."""
    from datetime import timedelta

    from django.utils import timezone

    (s0, _), (s1, _), (s2, _) = full_class[0], full_class[1], full_class[2]
    base = {"course": course, "cluster": cluster, "template": sleep_template}
    stuck = Job.objects.create(owner=s0, state="pending", **base)
    Job.objects.filter(pk=stuck.pk).update(created_at=timezone.now() - timedelta(minutes=40))
    # Pending, as on the scheduler: a queued one would be sent to SLURM by any worker this test session runs.
    Job.objects.create(owner=s1, state="pending", **base)
    Job.objects.create(owner=s2, state="failed", **base)
    Job.objects.create(owner=instructor, state="completed", **base)
    page = open_page(browser, 1280)
    log_in(page, web, "ines")
    table = page.locator("#dashboard-students")
    shown = table.locator("tbody tr:visible")
    with Feed(course, full_class):
        page.goto(f"{web.url}/courses/{course.slug}/dashboard/")
        expect(shown).to_have_count(STUDENTS)
        page.evaluate("window.notReloaded = true")
        tools = page.locator("[data-student-table] .filter-buttons")
        for flag, names in (("Stuck", ["student0"]), ("Waiting", ["student0", "student1"]), ("Failed", ["student2"])):
            tools.get_by_role("button", name=flag).click()
            expect(tools.get_by_role("button", name=flag)).to_have_attribute("aria-pressed", "true")
            expect(shown).to_have_count(len(names))
            assert [r.get_attribute("data-value") for r in shown.locator("td:first-child").all()] == names
        tools.get_by_role("button", name="Idle").click()
        expect(shown).to_have_count(len(IDLE), timeout=20_000)  # the idle flags come with the frames
        expect(tools.get_by_role("button", name="Idle")).to_contain_text(f"({len(IDLE)})")
        expect(page.locator("[data-shown]")).to_have_text(f"Showing {len(IDLE)} of {STUDENTS} students: idle.")
        tools.get_by_role("button", name="Everyone").click()
        expect(shown).to_have_count(STUDENTS)

        header = table.locator("thead th").first
        expect(header).to_have_attribute("aria-sort", "ascending")
        header.get_by_role("button").click()
        expect(header).to_have_attribute("aria-sort", "descending")
        assert shown.first.locator("td").first.get_attribute("data-value") == "student59"  # numeric order
        failed = table.locator("thead th").nth(5)
        failed.get_by_role("button").focus()
        page.keyboard.press("Enter")
        expect(failed).to_have_attribute("aria-sort", "descending")
        assert shown.first.locator("td").first.get_attribute("data-value") == "student2"
        assert page.evaluate("window.notReloaded") is True
        page.screenshot(path=f"{SHOTS}/dashboard-students-sorted-1280.png", full_page=True)

        phone = open_page(browser, 390)
        log_in(phone, web, "ines")
        phone.goto(f"{web.url}/courses/{course.slug}/dashboard/")
        phone_rows = phone.locator("#dashboard-students tbody tr:visible")
        expect(phone_rows).to_have_count(STUDENTS)
        phone.select_option("[data-sort-select]", label="Waiting")
        assert phone_rows.first.locator("td").first.get_attribute("data-value") == "student0"
        phone.locator("[data-student-table] .filter-buttons").get_by_role("button", name="Failed").click()
        try:
            expect(phone_rows).to_have_count(1)
        except AssertionError:  # say which rows, with their flags, a failure left on the phone
            seen = [(r.get_attribute("data-flags"), r.locator("td").first.get_attribute("data-value"))
                    for r in phone_rows.all()]  # fmt: skip
            raise AssertionError(f"the phone shows {seen} after Failed") from None
        assert phone.evaluate("document.scrollingElement.scrollWidth") <= 390
        phone.screenshot(path=f"{SHOTS}/dashboard-students-filtered-390.png", full_page=True)


@pytest.mark.timeout(120)
def test_a_student_whose_job_ended_keeps_a_row_marked_ended(web, browser, instructor, course, full_class):
    page = open_page(browser, 1280)
    log_in(page, web, "ines")
    heatmap = page.locator("[data-chart=heatmap]")
    with Feed(course, full_class) as feed:
        page.goto(f"{web.url}/courses/{course.slug}/dashboard/")
        expect(heatmap).to_have_attribute("data-rows", str(STUDENTS), timeout=30_000)
        feed.ended = {5}
        ended = page.locator("[data-chart=heatmap] .heat-label", has_text="Student No. 5 · 2 GPUs · ended")
        expect(ended).to_have_count(1, timeout=30_000)  # after 15 s without frames, not gone
        expect(heatmap).to_have_attribute("data-rows", str(STUDENTS))
        labels = page.locator("[data-chart=heatmap] .heat-label").all_text_contents()
        assert labels[-1].endswith("· ended")  # after the students still at work
        assert "Student No. 5" not in page.locator("[data-idle-now]").inner_text()


def test_the_heatmap_says_when_its_gpus_are_the_demos_simulated_ones(web, browser, instructor, course, full_class):
    page = open_page(browser, 390)
    log_in(page, web, "ines")
    note = page.locator("[data-heatmap-simulated]")
    with Feed(course, full_class) as feed:
        page.goto(f"{web.url}/courses/{course.slug}/dashboard/")
        expect(page.locator("[data-chart=heatmap]")).to_have_attribute("data-rows", str(STUDENTS), timeout=30_000)
        expect(note).to_be_hidden()  # measured GPUs: no note
        feed.simulated = True
        expect(note).to_be_visible(timeout=15_000)
        expect(note).to_contain_text("nothing on this heatmap was measured")
        # The last hour's card says it too at its next redraw (its running jobs have no summary yet).
        empty_hour = "{start: Date.now(), minutes: 60, rows: [], simulated: false}"
        page.evaluate(f"document.querySelector('[data-hour-grid]').classHour.draw({empty_hour})")
        expect(page.locator("[data-hour-simulated]")).to_be_visible()


@pytest.mark.timeout(180)
@pytest.mark.parametrize("width", [1280, 390])
def test_the_last_hour_keeps_a_row_for_each_student_whose_job_ended_and_draws_it_once(
    web, browser, instructor, course, full_class, width
):
    """Stored figures (no feed): half the class ended 40 minutes ago, half still runs; each row is a student, each
    column a minute, drawn from the page's JSON into one canvas."""
    start = timezone.now() - timedelta(minutes=50)
    for i, (_, job) in enumerate(full_class):
        if i % 2:
            Job.objects.filter(pk=job.pk).update(state="completed", finished_at=timezone.now() - timedelta(minutes=40))
        x = [int((start + timedelta(seconds=10 * s)).timestamp() * 1000) for s in range(60)]  # ten minutes
        series = {"gpu-util": {f"n:{g}": {"name": f"GPU {g}", "x": x, "y": [float(i)] * 60} for g in range(2)}}
        SeriesChunk.objects.create(job=job, start=start, end=start + timedelta(minutes=10), series=series)
    page = open_page(browser, width)
    log_in(page, web, "ines")
    page.goto(f"{web.url}/courses/{course.slug}/dashboard/")
    grid = page.locator("[data-hour-grid]")
    expect(grid).to_have_attribute("data-rows", str(STUDENTS))
    labels = grid.locator(".heat-label").all_text_contents()
    jobs = " · 1 job" if width > 600 else ""  # a phone's labels leave the count out
    assert labels[0] == f"Student No. 0{jobs}" and labels[1] == f"Student No. 1{jobs} · ended"  # least busy first
    assert f"{MARKUP} No. {STUDENTS - 1}{jobs} · ended" in labels  # a name is text, never markup
    size = page.evaluate(
        "(() => { const c = document.querySelector('[data-hour-grid] canvas'); return [c.width, c.height]; })()"
    )
    assert size == [60, STUDENTS]  # a pixel per student-minute, scaled up by CSS
    column = 60 - 50 + 2  # ten minutes in, a minute the chunk covers
    cell = page.evaluate(f"document.querySelector('[data-hour-grid]').classHour.cellText(3, {column})")
    assert cell.startswith("Student No. 3 · ") and cell.endswith(" · 3 %")
    assert page.evaluate("document.querySelector('[data-hour-grid]').classHour.cellText(3, 59)").endswith(
        "no GPU in use"
    )
    expect(page.locator("[data-hour-simulated]")).to_be_hidden()
    page.locator("[data-class-hour]").screenshot(path=f"{SHOTS}/class-hour-{width}.png")
    if width == 390:
        no_sideways_scroll(page)
    # A minute later the page asks hour.json again and redraws from it (here: the same rows).
    page.evaluate("document.querySelector('[data-hour-grid]').classHour.refresh()")
    expect(grid).to_have_attribute("data-rows", str(STUDENTS))
