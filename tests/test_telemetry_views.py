"""The telemetry pages: who may open them, what they show, and a constant number of queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from jobs.models import Job
from telemetry.models import JobSummary, Node

pytestmark = pytest.mark.django_db


def finished_job(owner, course, cluster, template, *, gpus=2, hours=1.5, util=40.0):
    start = timezone.now() - timedelta(hours=hours + 1)
    job = Job.objects.create(owner=owner, course=course, cluster=cluster, template=template, state="completed",
                             gpus=gpus, started_at=start, finished_at=start + timedelta(hours=hours))  # fmt: skip
    JobSummary.objects.create(job=job, gpu_hours=gpus * hours, mean_gpu_util=util, samples=100)
    return job


def test_dashboard_and_report_are_for_the_courses_instructors(
    login, alice, bob, carol, instructor, course, cluster, sleep_template
):
    urls = [f"/courses/{course.slug}/dashboard/", f"/courses/{course.slug}/report.csv"]
    for url in urls:
        assert Client().get(url).status_code == 302  # anonymous: to the login page
        assert login(alice).get(url).status_code == 404
        assert login(carol).get(url).status_code == 404
    finished_job(alice, course, cluster, sleep_template)
    page = login(instructor).get(urls[0])
    assert page.status_code == 200
    assert 'data-socket="/ws/courses/' in page.content.decode()
    assert b'data-label="GPU-hours" data-value="3.000000">3</td>' in page.content  # alice's GPU-hours
    report = login(instructor).get(urls[1]).content.decode().splitlines()
    assert report[0].startswith("student,job,template,cluster,state,gpus")
    assert report[1].startswith("alice,") and ",3.0,40.0," in report[1]


def test_dashboard_query_count_does_not_grow_with_jobs(
    login, alice, bob, instructor, course, cluster, sleep_template, django_assert_max_num_queries
):
    finished_job(alice, course, cluster, sleep_template)
    client = login(instructor)
    with django_assert_max_num_queries(14) as few:  # 2 of them the last hour's (telemetry/class_hour.py)
        client.get(f"/courses/{course.slug}/dashboard/")
    for _ in range(20):
        finished_job(bob, course, cluster, sleep_template)
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get(f"/courses/{course.slug}/dashboard/")


def test_the_node_page_says_what_its_charts_hold(login, admin_user, cluster, settings):
    settings.TELEMETRY_FLUSH_SECONDS = 90
    node = Node.objects.create(cluster=cluster, name="gpu01", gpus=4)
    note = login(admin_user).get(f"/nodes/{node.pk}/").content.decode()
    assert "the last 60 minutes as ten-second averages" in note and "at most the last 90 seconds" in note
    assert "ten minutes at full detail" not in note


def test_node_pages_are_for_admins_only(login, admin_user, instructor, alice, cluster):
    node = Node.objects.create(cluster=cluster, name="gpu01", gpus=4)
    for url in ("/nodes/", f"/nodes/{node.pk}/"):
        assert login(instructor).get(url).status_code == 404
        assert login(alice).get(url).status_code == 404
        assert login(admin_user).get(url).status_code == 200
    assert b"/ws/nodes/" in login(admin_user).get(f"/nodes/{node.pk}/").content


def test_job_page_has_live_charts_and_the_summary_when_it_ended(login, alice, course, cluster, sleep_template):
    job = finished_job(alice, course, cluster, sleep_template, util=61.5)
    page = login(alice).get(f"/jobs/{job.pk}/").content.decode()
    assert f'data-socket="/ws/jobs/{job.pk}/"' in page and 'data-chart="gpu-util"' in page
    assert "vendor/uplot.min.js" in page and "cdn" not in page.lower()
    assert "61.5 %" in page and "GPU-hours" in page


def test_a_jobs_summary_keeps_the_trainers_last_loss(alice, course, cluster, sleep_template):
    """The job tables' Loss column reads the summary the collector stores when a job ends."""
    from telemetry.frames import FrameBuilder
    from telemetry.hints import HintRules
    from telemetry.parsers import TrainerPoint
    from telemetry.summary import store_ended

    job = finished_job(alice, course, cluster, sleep_template)
    JobSummary.objects.filter(job=job).delete()
    builder = FrameBuilder()
    builder.rules[str(job.pk)] = HintRules()
    points = [TrainerPoint(epoch=0, step=s, loss=3.0 - s / 100, tokens_per_s=1000.0 + s) for s in (10, 20, 30)]
    builder._account(str(job.pk), [], [], points, now=1000.0)
    assert store_ended(builder.usage) == [str(job.pk)]
    summary = JobSummary.objects.get(job=job)
    assert summary.final_loss == pytest.approx(2.7) and summary.mean_tokens_per_s == pytest.approx(1020.0)
