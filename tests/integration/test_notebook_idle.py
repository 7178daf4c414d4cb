"""Interactive sessions' own idle rule on the real stack: a JupyterLab whose kernel sat idle past the course's
(one-minute) session limit is ended by the worker's pass, which asked the real server's /api/kernels through the
portal's address for it, with an event and the student's notification."""

from __future__ import annotations

import pytest

from clusters.choices import RunAs
from core.choices import EventKind, JobState
from courses.models import Course
from notifications.models import Notification

from .conftest import wait_for
from .notebooks import Browserless, launch_notebook, run_code
from .test_cluster_identity import students, with_identities  # noqa: F401  (the students' UNIX users)


@pytest.mark.timeout(400)
def test_an_idle_session_is_ended_with_an_event_and_a_notification(
    worker,
    web,
    alice,
    bob,
    course,
    cluster,
    students,  # noqa: F811
    api_for,
    job_state,
):
    with_identities(cluster, RunAs.SUDO, alice, bob, students)  # as labalice, clear of clean-ups of labsvc's jobs
    Course.objects.filter(pk=course.pk).update(session_idle_minutes=1)
    job = job_state(launch_notebook(api_for, alice, cluster, gpus_per_node=0), JobState.RUNNING, timeout=120)
    lab = Browserless(web, alice, job)
    lab.wait_ready()
    kernel = lab.post("api/kernels", {"name": "python3"}).json()
    with lab.socket(f"api/kernels/{kernel['id']}/channels") as socket:
        assert run_code(socket, "print(6 * 7)").strip() == "42"  # used once, then left alone

    from workers.tasks import end_idle_sessions

    def ended():
        end_idle_sessions.delay()  # what beat sends every minute
        return job.events.filter(kind=EventKind.CANCEL).first()

    event = wait_for(ended, timeout=240, interval=10, what="the idle session to be ended")
    assert event.actor is None and "kernels did nothing for" in event.message
    assert "idle for 1 minutes" in event.message
    job_state(job, JobState.CANCELLED, timeout=120)
    cancelled = Notification.objects.filter(user=alice, job=job, event="stopped_by_rule")  # the course's idle rule
    told = wait_for(cancelled.first, what="the student to be told")
    assert "kernels did nothing" in told.text
