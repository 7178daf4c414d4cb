"""The JupyterLab session page and the job page's way to it: anonymous, another student, the owner, the course's
instructor and a TA (the page without JupyterLab); the time left, the warning ten minutes before, and the end."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.utils import timezone

from core.choices import JobState, SessionKind
from courses.models import Enrollment, Role
from jobs import access
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
    assert 'id="notebook-frame"' in page and 'id="open-jupyterlab"' in page  # the frame loads once the server answers
    assert f'data-ready-url="/jobs/{running.pk}/jupyter/ready/"' in page
    assert "<strong>9 min</strong> left" in page
    assert 'data-telemetry="job"' in page and "owner-only" not in page


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


def test_instructor_and_ta_see_the_session_page_without_jupyterlab(login, running, instructor, make_user, course):
    ta = make_user("tara")
    Enrollment.objects.create(user=ta, course=course, role=Role.TA)
    for user in (instructor, ta):
        response = login(user).get(url(running))
        page = response.content.decode()
        assert response.status_code == 200 and 'id="owner-only"' in page and 'data-telemetry="job"' in page
        assert "notebook-frame" not in page and "open-jupyterlab" not in page and "/lab/" not in page
        status = login(user).get(url(running) + "status/").content.decode()
        assert "open-jupyterlab" not in status and "<strong>9 min</strong> left" in status


def test_only_the_owner_may_open_jupyterlab_itself(running, alice, bob, instructor, admin_user):
    assert access.get_job_notebook(alice, running.pk) == running
    for user in (instructor, admin_user):
        with pytest.raises(PermissionDenied, match="Only the student who launched"):
            access.get_job_notebook(user, running.pk)
    with pytest.raises(Http404):
        access.get_job_notebook(bob, running.pk)


def test_job_page_offers_jupyterlab_only_for_a_running_session(login, running, alice, make_job, sleep_template):
    assert b'id="open-notebook"' in login(alice).get(f"/jobs/{running.pk}/").content
    Job.objects.filter(pk=running.pk).update(state=JobState.COMPLETED)
    assert b'id="open-notebook"' not in login(alice).get(f"/jobs/{running.pk}/").content
    sleep_template.session = SessionKind.BATCH
    sleep_template.save()
    assert login(alice).get(url(running)).status_code == 404  # a batch job has no JupyterLab
