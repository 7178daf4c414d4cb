"""The job tables (My jobs, a course's jobs): filters, empty states, per-row actions and instructors' bulk cancel."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from courses.models import Enrollment, Role
from jobs.models import Job, JobEvent
from jobs.templatetags.job_tables import duration

pytestmark = pytest.mark.django_db


def set_state(job, state: str, **fields) -> Job:
    Job.objects.filter(pk=job.pk).update(state=state, **fields)
    return Job.objects.get(pk=job.pk)


def test_students_filter_their_jobs_by_state_template_and_text(login, make_job, alice):
    queued, running = make_job(alice), make_job(alice)
    running = set_state(running, "running", scheduler_id="4242")
    client = login(alice)
    url = reverse("jobs:my_jobs")
    by_state = client.get(url, {"state": "running"}).content.decode()
    assert running.short_id in by_state and queued.short_id not in by_state
    unfinished = client.get(url, {"state": "unfinished"}).content.decode()
    assert running.short_id in unfinished and queued.short_id in unfinished
    by_id = client.get(url, {"q": queued.short_id}).content.decode()
    assert queued.short_id in by_id and running.short_id not in by_id
    by_scheduler_id = client.get(url, {"q": "4242"}).content.decode()
    assert running.short_id in by_scheduler_id and queued.short_id not in by_scheduler_id
    page = client.get(url).content.decode()
    assert 'name="q"' in page and '<option value="sleep-echo">Sleep and echo</option>' in page


def test_an_empty_filter_says_no_match_and_an_empty_list_says_no_jobs_yet(login, make_job, alice, bob):
    make_job(alice)
    url = reverse("jobs:my_jobs")
    nothing = login(alice).get(url, {"template": "no-such-template"}).content.decode()
    assert "No jobs match these filters" in nothing and "No jobs yet" not in nothing
    assert "No jobs yet" in login(bob).get(url).content.decode()
    refreshed = login(alice).get(url, {"state": "failed"}, headers={"HX-Request": "true"}).content.decode()
    assert "No jobs match these filters" in refreshed  # the 5-second refresh keeps the same words


def test_rows_offer_cancel_on_unfinished_jobs_and_clone_on_every_job(login, make_job, alice):
    done, live = make_job(alice), make_job(alice)
    done = set_state(done, "completed")
    body = login(alice).get(reverse("jobs:my_jobs")).content.decode()
    assert body.count('action="/jobs/') == 1 and f'action="{reverse("jobs:cancel", args=[live.pk])}"' in body
    assert f'data-confirm-cancel="Cancel job {live.short_id} (Sleep and echo)?"' in body  # asked in the page's dialog
    assert "confirm(" not in body and 'id="table-cancel-dialog"' in body and "js/job_tables.js" in body
    assert reverse("jobs:clone", args=[done.pk]) in body and reverse("jobs:clone", args=[live.pk]) in body


def test_row_cancel_goes_back_to_the_table(login, make_job, alice):
    job = make_job(alice)
    answer = login(alice).post(reverse("jobs:cancel", args=[job.pk]), {"next": "/jobs/?state=queued"})
    assert answer.status_code == 302 and answer.url == "/jobs/?state=queued"
    assert Job.objects.get(pk=job.pk).state == "cancelled"
    elsewhere = login(alice).post(reverse("jobs:cancel", args=[job.pk]), {"next": "https://evil.example/"})
    assert elsewhere.url == job.get_absolute_url()  # never off the site


def test_duration_reads_in_hours_minutes_and_seconds(make_job, alice):
    job = make_job(alice)
    assert duration(job) == "—"
    start = timezone.now() - timedelta(hours=2)
    job = set_state(job, "completed", started_at=start, finished_at=start + timedelta(hours=1, minutes=5, seconds=3))
    assert duration(job) == "1 h 05 min"
    job = set_state(job, "completed", finished_at=start + timedelta(seconds=40))
    assert duration(job) == "40 s"
    job = set_state(job, "running", finished_at=None, started_at=timezone.now() - timedelta(minutes=12, seconds=4))
    assert duration(job).startswith("12 min 0")


def test_course_student_filter_is_a_select_of_the_roster(login, make_job, alice, bob, instructor, course):
    alice.first_name, alice.last_name = "Alice", "Liddell"
    alice.save()
    alice_job, bob_job = make_job(alice), make_job(bob)
    client = login(instructor)
    page = client.get(reverse("courses:jobs", args=[course.slug])).content.decode()
    assert '<select name="student" id="id_student">' in page
    assert '<option value="alice">Alice Liddell (alice)</option>' in page and '<option value="ines"' not in page
    only_bob = client.get(reverse("courses:jobs", args=[course.slug]), {"student": "bob"}).content.decode()
    assert bob_job.short_id in only_bob and alice_job.short_id not in only_bob
    assert (
        "No jobs match these filters"
        in client.get(reverse("courses:jobs", args=[course.slug]), {"student": "nobody"}).content.decode()
    )


@pytest.fixture
def other_instructor(make_user, other_course):
    user = make_user("otto")
    Enrollment.objects.create(course=other_course, user=user, role=Role.INSTRUCTOR)
    return user


def bulk_cancel(client, course, *jobs):
    return client.post(reverse("courses:cancel_jobs", args=[course.slug]), {"job": [str(j.pk) for j in jobs]})


def test_bulk_cancel_is_for_the_courses_instructors_only(
    login, make_job, alice, bob, instructor, other_instructor, course, other_course
):
    queued, running = make_job(alice), set_state(make_job(bob), "running", scheduler_id="77")
    assert bulk_cancel(Client(), course, queued).status_code == 302  # anonymous: to the login page
    assert bulk_cancel(login(alice), course, queued, running).status_code == 404  # a student, even for their own
    assert bulk_cancel(login(other_instructor), course, queued).status_code == 404
    # Another course's instructor, through their own course's address: those jobs are not theirs to find.
    bulk_cancel(login(other_instructor), other_course, queued, running)
    assert set(Job.objects.values_list("state", flat=True)) == {"queued", "running"}
    assert not Job.objects.filter(cancel_requested_at__isnull=False).exists()

    answer = bulk_cancel(login(instructor), course, queued, running)
    assert answer.status_code == 302 and answer.url == reverse("courses:jobs", args=[course.slug])
    assert Job.objects.get(pk=queued.pk).state == "cancelled"  # never submitted: cancelled at once
    running = Job.objects.get(pk=running.pk)
    assert running.cancel_requested_at is not None  # asked of the scheduler, as its own Cancel button does
    assert JobEvent.objects.filter(job=queued, to_state="cancelled", actor=instructor).exists()
    assert JobEvent.objects.filter(job=running, actor=instructor).exists()


def test_bulk_cancel_reports_jobs_that_had_already_ended(login, make_job, alice, instructor, course):
    ended = set_state(make_job(alice), "completed")
    client = login(instructor)
    answer = client.post(
        reverse("courses:cancel_jobs", args=[course.slug]),
        {"job": [str(ended.pk), "not-a-uuid"], "next": f"/courses/{course.slug}/?state=completed"},
        follow=True,
    )
    assert "Cancelling 0 jobs. 1 had already ended." in answer.content.decode()
    assert answer.redirect_chain[-1][0] == f"/courses/{course.slug}/?state=completed"
    assert Job.objects.get(pk=ended.pk).state == "completed"


def test_course_rows_carry_checkboxes_for_unfinished_jobs_only(login, make_job, alice, instructor, course):
    live, done = make_job(alice), set_state(make_job(alice), "failed")
    page = login(instructor).get(reverse("courses:jobs", args=[course.slug])).content.decode()
    assert f'value="{live.pk}" form="bulk-cancel"' in page and f'value="{done.pk}" form="bulk-cancel"' not in page
    assert 'id="bulk-cancel"' in page and "Cancel selected" in page
    assert 'id="bulk-cancel"' not in login(alice).get(reverse("jobs:my_jobs")).content.decode()


def test_filtered_and_searched_lists_keep_a_constant_query_count(
    make_user, make_job, alice, bob, instructor, course, django_assert_max_num_queries
):
    student, teacher = Client(), Client()
    student.force_login(alice)
    teacher.force_login(instructor)
    make_job(alice)
    params = {"state": "unfinished", "q": "sleep", "template": "sleep-echo"}
    mine, course_url = reverse("jobs:my_jobs"), reverse("courses:jobs", args=[course.slug])
    with django_assert_max_num_queries(20) as own:
        student.get(mine, params)
    with django_assert_max_num_queries(20) as taught:
        teacher.get(course_url, {**params, "student": "alice"})
    for owner in (alice, alice, bob, alice):
        make_job(owner)
    with django_assert_max_num_queries(len(own.captured_queries)):
        assert student.get(mine, params).content.decode().count("<tr>") >= 4
    with django_assert_max_num_queries(len(taught.captured_queries)):
        teacher.get(course_url, {**params, "student": "alice"})


def _cells(body: str, label: str) -> list[str]:
    return re.findall(rf'<td data-label="{re.escape(label)}"[^>]*>(.*?)</td>', body)


def test_runs_of_one_template_show_the_parameters_that_differ_and_their_results(
    login, make_job, alice, instructor, course
):
    """Five "Sleep and echo" rows that differ only in Seconds: Seconds is a column, Message (the same) is not."""
    from telemetry.models import JobSummary

    runs = [set_state(make_job(alice, seconds=s), "completed") for s in (1, 2, 3, 4, 5)]  # the quota allows 4 at once
    ended = runs[0]
    JobSummary.objects.create(job=ended, gpu_hours=0.1, final_loss=2.3456, mean_tokens_per_s=12345.6)
    for url, user in ((reverse("jobs:my_jobs"), alice), (reverse("courses:jobs", args=[course.slug]), instructor)):
        body = login(user).get(url).content.decode()
        head = body.split("<thead>")[1].split("</thead>")[0]
        assert '">Seconds</th>' in head and "Message" not in head and "Partition" not in head
        assert ">Loss</th>" in head and ">tok/s</th>" in head
        assert _cells(body, "Seconds") == ["5", "4", "3", "2", "1"]  # newest first
        assert _cells(body, "Loss")[-1] == "2.346" and _cells(body, "tok/s")[-1] == "12346"
        refreshed = login(user).get(url, headers={"HX-Request": "true"}).content.decode()
        assert '">Seconds</th>' in refreshed  # the refresh brings the head with the rows


def test_a_template_run_once_or_runs_that_agree_add_no_columns(login, make_job, alice):
    make_job(alice, seconds=3)
    make_job(alice, seconds=3)
    head = login(alice).get(reverse("jobs:my_jobs")).content.decode().split("<thead>")[1].split("</thead>")[0]
    assert "Seconds" not in head and "Loss" not in head  # nothing differs, and no run has results yet


def test_run_columns_keep_a_constant_query_count(make_job, alice, instructor, course, django_assert_max_num_queries):
    from telemetry.models import JobSummary

    student, teacher = Client(), Client()
    student.force_login(alice)
    teacher.force_login(instructor)
    set_state(make_job(alice, seconds=1), "failed")
    set_state(make_job(alice, seconds=2), "failed")
    with django_assert_max_num_queries(20) as own:
        student.get(reverse("jobs:my_jobs"))
    with django_assert_max_num_queries(20) as taught:
        teacher.get(reverse("courses:jobs", args=[course.slug]))
    for seconds in range(3, 9):
        job = set_state(make_job(alice, seconds=seconds, exit_code=seconds), "completed")
        JobSummary.objects.create(job=job, final_loss=1.0 + seconds, mean_tokens_per_s=100.0 * seconds)
    with django_assert_max_num_queries(len(own.captured_queries)):
        assert student.get(reverse("jobs:my_jobs")).content.decode().count('data-label="Exit code"') == 8
    with django_assert_max_num_queries(len(taught.captured_queries)):
        teacher.get(reverse("courses:jobs", args=[course.slug]))


def test_a_running_run_shows_its_newest_trainer_point_until_it_has_a_summary(login, make_job, alice):
    from jobs.trainer_curve import _curve_key, _sync_client, add_curve_points

    running = set_state(make_job(alice, seconds=1), "running", started_at=timezone.now())
    set_state(make_job(alice, seconds=2), "completed")
    client = _sync_client()
    pipe = client.pipeline()
    add_curve_points(
        pipe, running.pk, [{"step": 10, "loss": 3.5, "tok_s": 900.0}, {"step": 20, "loss": 2.75, "tok_s": 950.0}]
    )
    pipe.execute()
    try:
        body = login(alice).get(reverse("jobs:my_jobs")).content.decode()
    finally:
        client.delete(_curve_key(running.pk))
    assert _cells(body, "Loss")[1] == "2.750" and _cells(body, "tok/s")[1] == "950"  # the older row
    assert "—" in _cells(body, "Loss")[0]  # the completed run stored no summary
