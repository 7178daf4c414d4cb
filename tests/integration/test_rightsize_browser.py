"""Chromium: an ended job's right-size report and its right-sized relaunch form, and the instructor's class
efficiency table, at laptop and phone widths. (That the figures are sacct's is test_slurm_accounting.py's part.)

Screenshots go to $GPULAB_SCREENSHOT_DIR (default /tmp/gpulab-shots).
"""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs.models import Job, JobTemplate, JobUsage
from telemetry.models import JobSummary

from . import made_up
from .test_browser import log_in
from .test_job_page_browser import SHOTS, WIDTHS, _no_horizontal_scroll, _page

pytestmark = pytest.mark.browser
GIB = 1024**3
PARAMS = [
    {"name": "partition", "type": "choice", "label": "Partition", "default": "gpu"},
    {"name": "time_minutes", "type": "int", "label": "Time limit (minutes)", "default": 60, "min": 5, "max": 120},
    {"name": "gpus_per_node", "type": "int", "label": "GPUs", "default": 4, "min": 1, "max": 4},
    {"name": "cpus_per_task", "type": "int", "label": "CPU cores", "default": 8, "min": 1, "max": 16},
    {"name": "mem_gb", "type": "int", "label": "Memory (GB)", "default": 32, "min": 1, "max": 64},
]


@pytest.fixture
def ended_jobs(transactional_db, course, cluster, alice, bob):
    """Alice's oversized training run (4 GPUs at 9 %, 1 busy core of 8, 2 GiB of 32, 12 of 60 minutes) and a
    well-sized one of Bob's, as the poll and the collector would have left them."""
    template = JobTemplate.objects.create(
        name="Fine-tune a small model",
        slug="fine-tune",
        body="python train.py\n",
        parameters=PARAMS,
        status=JobTemplate.Status.PUBLISHED,
        max_gpus=4,
        max_minutes=120,
    )
    template.courses.add(course)
    finished = timezone.now() - timedelta(minutes=5)
    jobs = []
    for owner, util, cpu_seconds, rss, minutes in [(alice, 9.0, 720, 2, 12), (bob, 83.0, 5200, 26, 50)]:
        params = {"partition": "gpu", "time_minutes": 60, "gpus_per_node": 4, "cpus_per_task": 8, "mem_gb": 32}
        job = Job.objects.create(
            owner=owner,
            course=course,
            template=template,
            cluster=cluster,
            params=params,
            script="python train.py\n",
            gpus=4,
            state="completed",
            scheduler_id=made_up.scheduler_id(),
            exit_code=0,
            submitted_at=finished - timedelta(minutes=minutes + 1),
            started_at=finished - timedelta(minutes=minutes),
            finished_at=finished,
        )
        JobUsage.objects.create(
            job=job,
            elapsed_seconds=minutes * 60,
            cpu_seconds=cpu_seconds,
            cpus=8,
            gpus=4,
            max_rss_bytes=rss * GIB,
            requested_memory_bytes=32 * GIB,
            time_limit_minutes=60,
        )
        JobSummary.objects.create(
            job=job,
            gpu_hours=round(4 * minutes / 60, 3),
            mean_gpu_util=util,
            max_gpu_util=util + 10,
            peak_gpu_memory_mib=6144,
            gpu_memory_total_mib=81559,
            samples=200,
        )
        jobs.append(job)
    return jobs


@pytest.mark.timeout(120)
@pytest.mark.parametrize("size", WIDTHS)
def test_student_reads_the_report_and_opens_the_right_sized_form(chromium, live_server, alice, ended_jobs, size):
    job = ended_jobs[0]
    page = _page(chromium, size)
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}{job.get_absolute_url()}")
    report = page.locator("#rightsize")
    expect(report).to_contain_text("CPU cores: asked for 8, used 1.0 on average (13 % of it)")
    expect(report).to_contain_text("opens with GPUs 1, CPU cores 2, Memory (GB) 3, Time limit (minutes) 18")
    _no_horizontal_scroll(page)
    report.scroll_into_view_if_needed()
    report.screenshot(path=str(SHOTS / f"rightsize-report-{size}.png"))
    report.get_by_role("link", name="Launch again right-sized").click()
    page.wait_for_url(lambda url: "rightsized=1" in url)
    expect(page.locator("#id_param_cpus_per_task")).to_have_value("2")  # 1 busy core x 1.5, rounded up
    expect(page.locator("#id_param_mem_gb")).to_have_value("3")
    expect(page.locator("#id_param_time_minutes")).to_have_value("18")
    expect(page.locator("#id_param_gpus_per_node")).to_have_value("1")
    expect(page.get_by_text("right-sized from job")).to_be_visible()
    _no_horizontal_scroll(page)
    page.screenshot(path=str(SHOTS / f"rightsize-launch-form-{size}.png"), full_page=True)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("size", WIDTHS)
def test_instructor_sees_the_class_efficiency_table(chromium, live_server, instructor, course, ended_jobs, size):
    page = _page(chromium, size)
    log_in(page, live_server, instructor.username)
    page.goto(f"{live_server.url}/courses/{course.slug}/")
    table = page.locator("table.efficiency-table")
    expect(table.locator("tr", has_text="alice")).to_contain_text("9 %")
    expect(table.locator("tr", has_text="bob")).to_contain_text("83 %")
    _no_horizontal_scroll(page)
    page.locator("#efficiency").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"class-efficiency-{size}.png"), full_page=True)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("size", WIDTHS)
def test_a_job_cancelled_as_it_started_gets_one_note_not_advice(chromium, live_server, alice, ended_jobs, size):
    job = ended_jobs[0]
    Job.objects.filter(pk=job.pk).update(state="cancelled", started_at=job.finished_at - timedelta(seconds=7))
    JobUsage.objects.filter(job=job).update(elapsed_seconds=7)
    page = _page(chromium, size)
    log_in(page, live_server, "alice")
    page.goto(f"{live_server.url}{job.get_absolute_url()}")
    report = page.locator("#rightsize")
    expect(report).to_contain_text("The job was cancelled after 7 s, too short a run to tell what it needs")
    expect(report.locator("li")).to_have_count(0)
    expect(report).not_to_contain_text("nothing to change")
    _no_horizontal_scroll(page)
    report.scroll_into_view_if_needed()
    report.screenshot(path=str(SHOTS / f"rightsize-too-short-{size}.png"))
