"""The stale-state notice: what a page says when a cluster has not answered for more than two poll cycles."""

import os
import time

import pytest
from django.urls import reverse

from core import measurements
from core.choices import JobState
from jobs.models import Job
from jobs.staleness import notices_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def heard(monkeypatch):
    """The stored last-answer time per cluster (core/measurements.py), as epoch seconds."""
    times = {}
    monkeypatch.setattr(measurements, "last_heard", lambda names: {name: times.get(name) for name in names})
    return times


@pytest.fixture
def running(make_job, alice):
    job = make_job(alice)
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING, scheduler_id="77")
    return Job.objects.select_related("cluster").get(pk=job.pk)


def test_notice_names_the_cluster_and_how_long_ago(heard, running, settings):
    settings.GPULAB_POLL_INTERVAL = 5
    heard[running.cluster.name] = 1000.0
    (notice,) = notices_for(running, now=1074.0)
    assert notice.text == f"Last heard from {running.cluster.display_name} 74 s ago; states may be out of date."


def test_no_notice_within_two_poll_cycles(heard, running, settings):
    settings.GPULAB_POLL_INTERVAL = 30
    heard[running.cluster.name] = 1000.0
    assert notices_for(running, now=1059.0) == []
    assert notices_for(running, now=1061.0)


def test_no_notice_for_jobs_the_scheduler_does_not_hold(heard, running):
    heard[running.cluster.name] = 0.0
    running.state = JobState.COMPLETED
    assert notices_for([running], now=1000.0) == []


def test_long_silences_read_in_minutes_and_hours(heard, running):
    heard[running.cluster.name] = 0.0
    assert "5 min ago" in notices_for(running, now=300.0)[0].text
    assert "3 h ago" in notices_for(running, now=3 * 3600.0)[0].text


def test_job_page_and_its_refresh_say_it_beside_the_state(heard, running, client, login, alice, bob):
    assert client.get(reverse("jobs:status", args=[running.pk])).status_code == 302  # anonymous: to the login
    heard[running.cluster.name] = time.time() - 74
    client = login(alice)
    for url in (running.get_absolute_url(), reverse("jobs:status", args=[running.pk])):
        page = client.get(url).content.decode()
        badge, notice = page.index('id="job-state"'), page.index("Last heard from")
        assert 0 < notice - badge < 400 and "74 s ago; states may be out of date" in page
    assert login(bob).get(reverse("jobs:status", args=[running.pk])).status_code == 404


def test_my_jobs_and_course_table_refreshes_carry_the_notice(heard, running, login, alice, instructor, course):
    heard[running.cluster.name] = time.time() - 74
    for user, url in ((alice, reverse("jobs:my_jobs")), (instructor, reverse("courses:jobs", args=[course.slug]))):
        client = login(user)
        assert "states may be out of date" in client.get(url).content.decode()
        assert "states may be out of date" in client.get(url, HTTP_HX_REQUEST="true").content.decode()


def test_no_notice_once_the_cluster_answers(heard, running, login, alice):
    heard[running.cluster.name] = time.time()
    assert "Last heard" not in login(alice).get(running.get_absolute_url()).content.decode()


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs the Redis that `make test` starts")
def test_stored_answer_time_is_written_by_successful_polls_only():
    measurements.client().hdel(f"{measurements.PREFIX}heard", "stale-test")
    measurements.record_poll("stale-test", 0.1, "slurm_load_jobs error: Unable to contact slurm controller")
    assert measurements.last_heard(["stale-test"]) == {"stale-test": None}
    measurements.record_poll("stale-test", 0.1, "")
    assert time.time() - measurements.last_heard(["stale-test"])["stale-test"] < 5
