"""The class dashboard's student table and the per-student CSV beside report.csv: one row per enrolled student,
flags the table filters by (stuck, waiting, failed), escaped cells, and a constant number of queries."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from courses.models import Enrollment, Role
from jobs.models import Job
from telemetry.models import JobSummary

pytestmark = pytest.mark.django_db


def job(owner, course, cluster, template, state, *, age_minutes=1, gpus=1, hours=0.0, **fields) -> Job:
    created = timezone.now() - timedelta(minutes=age_minutes)
    if hours:
        fields |= {"started_at": created, "finished_at": created + timedelta(hours=hours)}
    made = Job.objects.create(owner=owner, course=course, cluster=cluster, template=template, state=state, gpus=gpus,
                              **fields)  # fmt: skip
    Job.objects.filter(pk=made.pk).update(created_at=created)
    return made


@pytest.fixture
def class_day(course, cluster, sleep_template, alice, bob, make_user, instructor):
    """alice: one completed 2-GPU hour, then a job waiting 40 minutes (stuck); bob: newest job failed; carl: nothing;
    the instructor ran a job too (an instructor is not a student: no row)."""
    done = job(alice, course, cluster, sleep_template, "completed", age_minutes=200, gpus=2, hours=1.0)
    JobSummary.objects.create(job=done, gpu_hours=2.0, mean_gpu_util=55.0, samples=10)
    job(alice, course, cluster, sleep_template, "pending", age_minutes=40)
    job(bob, course, cluster, sleep_template, "completed", age_minutes=90, hours=0.5)
    job(bob, course, cluster, sleep_template, "failed", age_minutes=30, hours=0.25)
    carl = make_user("carl", first_name='=HYPERLINK("http://evil")')
    Enrollment.objects.create(course=course, user=carl, role=Role.STUDENT)
    job(instructor, course, cluster, sleep_template, "completed", age_minutes=10, hours=0.1)
    return course


def rows_of(client, course) -> dict[str, dict[str, str]]:
    body = client.get(f"/courses/{course.slug}/students.csv").content.decode()
    return {row["student"]: row for row in csv.DictReader(io.StringIO(body))}


def test_the_student_csv_has_one_row_per_enrolled_student_with_their_totals(login, instructor, class_day):
    rows = rows_of(login(instructor), class_day)
    assert sorted(rows) == ["alice", "bob", "carl"]  # not the instructor's own job
    alice, bob, carl = rows["alice"], rows["bob"], rows["carl"]
    assert (alice["jobs"], alice["completed"], alice["waiting"], alice["failed"]) == ("2", "1", "1", "0")
    assert float(alice["gpu_hours"]) == pytest.approx(2.0) and alice["mean_gpu_util_pct"] == "55.0"
    assert (bob["jobs"], bob["failed"], bob["last_job_state"]) == ("2", "1", "failed")
    assert float(bob["gpu_hours"]) == pytest.approx(0.75)
    assert (carl["jobs"], carl["gpu_hours"], carl["last_activity"]) == ("0", "0.0", "")
    assert bob["last_activity"] > alice["last_activity"] > ""  # bob's job ended 15 minutes ago; alice launched at 40


def test_the_student_csv_escapes_a_name_a_spreadsheet_would_run(login, instructor, class_day):
    assert rows_of(login(instructor), class_day)["carl"]["name"] == '\'=HYPERLINK("http://evil")'


def test_the_student_csv_is_the_courses_teachers_only(login, alice, carol, class_day):
    url = f"/courses/{class_day.slug}/students.csv"
    assert Client().get(url).status_code == 302
    assert login(alice).get(url).status_code == 404
    assert login(carol).get(url).status_code == 404


def test_the_dashboard_links_the_student_csv_and_flags_rows_for_its_filters(login, instructor, class_day):
    page = login(instructor).get(f"/courses/{class_day.slug}/dashboard/").content.decode()
    assert f'href="/courses/{class_day.slug}/students.csv"' in page and "js/student_table.js" in page
    assert page.count('<tr data-flags="') == 3  # three students, no row for the instructor
    assert '<tr data-flags="stuck waiting">' in page and '<tr data-flags="failed">' in page
    assert '<tr data-flags="">' in page  # carl
    for words in ("Everyone", "Stuck", "Waiting", "Failed", "Idle"):
        assert f'">{words} ' in page
    assert 'data-filter="stuck" aria-pressed="false">Stuck <span class="count">(1)</span>' in page


def test_the_student_table_and_csv_keep_a_constant_query_count(
    login, instructor, class_day, cluster, sleep_template, make_user, django_assert_max_num_queries
):
    client = login(instructor)
    with django_assert_max_num_queries(14) as page:
        client.get(f"/courses/{class_day.slug}/dashboard/")
    with django_assert_max_num_queries(6) as export:
        client.get(f"/courses/{class_day.slug}/students.csv")
    for i in range(15):
        student = make_user(f"s{i}")
        Enrollment.objects.create(course=class_day, user=student, role=Role.STUDENT)
        job(student, class_day, cluster, sleep_template, "failed", hours=0.1)
    with django_assert_max_num_queries(len(page.captured_queries)):
        client.get(f"/courses/{class_day.slug}/dashboard/")
    with django_assert_max_num_queries(len(export.captured_queries)):
        assert len(rows_of(client, class_day)) == 18


def test_the_dashboard_keeps_the_last_hours_ended_jobs(login, instructor, alice, course, cluster, sleep_template):
    """The heatmap's ring replays frames of jobs that ended; the page still names them and lists what ended."""
    now = timezone.now()
    recent = job(alice, course, cluster, sleep_template, "failed", started_at=now - timedelta(minutes=50),
                 finished_at=now - timedelta(minutes=20))  # fmt: skip
    old = job(alice, course, cluster, sleep_template, "completed", started_at=now - timedelta(hours=3),
              finished_at=now - timedelta(hours=2))  # fmt: skip
    response = login(instructor).get(f"/courses/{course.slug}/dashboard/")
    labels = response.context["heatmap"]["jobs"]
    assert labels == {str(recent.pk): f"sleep-echo {str(recent.pk)[:8]}"}
    ended = response.content.decode().split('id="ended-recently"')[1].split("</ul>")[0]
    assert recent.get_absolute_url() in ended and old.get_absolute_url() not in ended and "Failed" in ended


def test_simulated_gpu_figures_are_no_students_utilization_and_the_report_says_which_are_which(
    login, instructor, class_day, bob
):
    replayed = Job.objects.get(owner=bob, state="completed")
    JobSummary.objects.create(job=replayed, gpu_hours=0.5, mean_gpu_util=93.0, samples=8, simulated_gpus=True)
    client = login(instructor)
    assert rows_of(client, class_day)["bob"]["mean_gpu_util_pct"] == ""  # the stand-in's 93 % is nobody's
    assert rows_of(client, class_day)["alice"]["mean_gpu_util_pct"] == "55.0"
    report = list(csv.DictReader(io.StringIO(client.get(f"/courses/{class_day.slug}/report.csv").content.decode())))
    figures = {(row["student"], row["state"]): row["gpu_figures"] for row in report}
    assert figures[("bob", "completed")] == "simulated" and figures[("alice", "completed")] == "measured"
    assert figures[("bob", "failed")] == ""  # no summary: nothing was sampled
