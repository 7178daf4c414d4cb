"""The JupyterLab session page and the job page's way to it: anonymous, another student, the owner, the course's
instructor (told, and on the timeline) and a TA; the time left, the warning ten minutes before, and the end."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.choices import EventKind, JobState, SessionKind
from courses.models import Enrollment, Role
from jobs.models import Job


@pytest.fixture
def running(make_job, alice, sleep_template):
    sleep_template.session = SessionKind.JUPYTERLAB
    sleep_template.save()
    job = make_job(alice, seconds=60, time_minutes=10)
    started = timezone.now() - timedelta(minutes=1, seconds=30)
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING, scheduler_id="4242", started_at=started)
    job.refresh_from_db()
    return job


def url(job) -> str:
    return f"/jobs/{job.pk}/jupyter/"


def test_anonymous_is_sent_to_log_in(client, running):
    response = client.get(url(running))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_another_student_gets_404_on_the_page_and_its_status(login, running, bob, carol):
    for user in (bob, carol):
        assert login(user).get(url(running)).status_code == 404
        assert login(user).get(url(running) + "status/").status_code == 404


def test_owner_sees_jupyterlab_the_time_left_and_the_charts(login, running, alice):
    page = login(alice).get(url(running)).content.decode()
    assert f'src="/jobs/{running.pk}/lab/lab"' in page and 'id="open-jupyterlab"' in page
    assert "<strong>9 min</strong> left" in page
    assert 'data-telemetry="job"' in page and "staff-notice" not in page


def test_ten_minutes_before_the_end_the_page_warns(login, running, alice, sleep_template):
    sleep_template.parameters[1]["max"] = 60
    sleep_template.save()
    Job.objects.filter(pk=running.pk).update(params={**running.params, "time_minutes": 60})
    assert 'id="ending-soon"' not in login(alice).get(url(running) + "status/").content.decode()
    Job.objects.filter(pk=running.pk).update(started_at=timezone.now() - timedelta(minutes=51, seconds=30))
    page = login(alice).get(url(running) + "status/").content.decode()
    assert 'id="ending-soon"' in page and "ends in 9 minutes" in page and "Save your notebooks" in page


def test_an_ended_session_says_so_and_offers_no_jupyterlab(login, running, alice):
    Job.objects.filter(pk=running.pk).update(state=JobState.TIMED_OUT, finished_at=timezone.now())
    page = login(alice).get(url(running)).content.decode()
    assert 'id="session-ended"' in page and "reached its time limit" in page
    assert "open-jupyterlab" not in page and "notebook-frame" not in page


def test_instructor_is_told_the_student_will_see_it_and_the_timeline_says_so(login, running, instructor, alice):
    response = login(instructor).get(url(running))
    assert response.status_code == 200 and b"staff-notice" in response.content
    login(instructor).get(url(running))  # once an hour, however many times
    notes = running.events.filter(kind=EventKind.NOTE, actor=instructor)
    assert notes.count() == 1 and "opened this job's JupyterLab" in notes.get().message
    assert b'class="small notice staff-visit"' in login(alice).get(url(running)).content  # the student sees it


def test_teaching_assistant_is_refused_with_a_reason(login, running, make_user, course):
    ta = make_user("tara")
    Enrollment.objects.create(user=ta, course=course, role=Role.TA)
    assert login(ta).get(url(running)).status_code == 403


def test_job_page_offers_jupyterlab_only_for_a_running_session(login, running, alice, make_job, sleep_template):
    assert b'id="open-notebook"' in login(alice).get(f"/jobs/{running.pk}/").content
    Job.objects.filter(pk=running.pk).update(state=JobState.COMPLETED)
    assert b'id="open-notebook"' not in login(alice).get(f"/jobs/{running.pk}/").content
    sleep_template.session = SessionKind.BATCH
    sleep_template.save()
    assert login(alice).get(url(running)).status_code == 404  # a batch job has no JupyterLab
