"""The stale-state notice: what a page says when a cluster has not answered for more than two poll cycles."""

import json
import os
import time

import pytest
import redis
from django.urls import reverse

from clusters.backends.ssh import CommandResult
from core import measurements
from core.choices import JobState
from jobs.models import Job
from jobs.staleness import notices_for
from jobs.status_panel import render_panel
from tests.kind_settings import set_cluster

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
    (notice,) = notices_for(running, now=1044.0)
    assert notice.text == f"No answer from {running.cluster.display_name} for 44 s; states may be out of date."


def test_no_notice_within_two_poll_cycles(heard, running, settings):
    settings.GPULAB_POLL_INTERVAL = 30
    heard[running.cluster.name] = 1000.0
    assert notices_for(running, now=1059.0) == []
    assert notices_for(running, now=1061.0)


def test_no_notice_for_jobs_the_scheduler_does_not_hold(heard, running):
    heard[running.cluster.name] = 0.0
    running.state = JobState.COMPLETED
    assert notices_for([running], now=1000.0) == []


def test_silences_past_a_minute_read_in_whole_minutes_then_hours(heard, running, settings):
    settings.GPULAB_POLL_INTERVAL = 5
    heard[running.cluster.name] = 0.0

    def said(seconds: float) -> str:
        return notices_for(running, now=seconds)[0].text.split(" for ", 1)[1].split(";")[0]

    steps = {59: "59 s", 60: "1 min", 61: "1 min", 119: "1 min", 120: "2 min", 179: "2 min", 300: "5 min"}
    steps |= {7199: "119 min", 7200: "2 h", 3 * 3600 + 59 * 60: "3 h"}
    assert {seconds: said(seconds) for seconds in steps} == steps


def test_a_silent_clusters_panel_changes_once_a_minute(heard, running):
    """The panel is sent again when its version (a digest of its words) changes: 12 polls 10 s apart over two
    silent minutes give two versions, one per minute."""
    from jobs.views.jobs import _status_context

    versions = []
    for seconds in range(60, 180, 10):
        heard[running.cluster.name] = time.time() - seconds
        versions.append(render_panel(_status_context(running)).seen)
    assert len(set(versions)) == 2


def test_job_page_and_its_refresh_say_it_beside_the_state(heard, running, client, login, alice, bob):
    assert client.get(reverse("jobs:status", args=[running.pk])).status_code == 302  # anonymous: to the login
    heard[running.cluster.name] = time.time() - 74
    client = login(alice)
    for url in (running.get_absolute_url(), reverse("jobs:status", args=[running.pk])):
        page = client.get(url).content.decode()
        badge, notice = page.index('id="job-state"'), page.index("No answer from")
        assert 0 < notice - badge < 400 and "for 1 min; states may be out of date" in page
    assert login(bob).get(reverse("jobs:status", args=[running.pk])).status_code == 404


def test_my_jobs_and_course_table_refreshes_carry_the_notice(heard, running, login, alice, instructor, course):
    heard[running.cluster.name] = time.time() - 74
    for user, url in ((alice, reverse("jobs:my_jobs")), (instructor, reverse("courses:jobs", args=[course.slug]))):
        client = login(user)
        assert "states may be out of date" in client.get(url).content.decode()
        assert "states may be out of date" in client.get(url, HTTP_HX_REQUEST="true").content.decode()


def test_no_notice_once_the_cluster_answers(heard, running, login, alice):
    heard[running.cluster.name] = time.time()
    assert "No answer from" not in login(alice).get(running.get_absolute_url()).content.decode()


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs the Redis that `make test` starts")
def test_stored_answer_time_is_written_by_successful_polls_only():
    measurements.client().hdel(f"{measurements.PREFIX}heard", "stale-test")
    measurements.record_poll("stale-test", 0.1, "slurm_load_jobs error: Unable to contact slurm controller")
    assert measurements.last_heard(["stale-test"]) == {"stale-test": None}
    measurements.record_poll("stale-test", 0.1, "")
    assert time.time() - measurements.last_heard(["stale-test"])["stale-test"] < 5


class Store:
    """The hashes core/measurements.py keeps in Redis, in memory (histograms are not kept)."""

    def __init__(self):
        self.hashes: dict[str, dict] = {}

    def hset(self, key, name, value):
        self.hashes.setdefault(key, {})[name] = value

    def hmget(self, key, names):
        return [self.hashes.get(key, {}).get(name) for name in names]

    def pipeline(self, **kwargs):
        raise redis.ConnectionError("no histograms in this store")


def test_a_poll_that_only_accounting_answered_keeps_the_notice_until_slurmctld_answers(
    monkeypatch, running, login, alice
):
    """slurmctld is down, slurmdbd is not: sacct still says "RUNNING" (the controller's last word, even for a job
    that ended meanwhile), so the poll must not count as hearing from the cluster."""
    from clusters.backends import ssh
    from workers.tasks import poll_cluster

    store = Store()
    monkeypatch.setattr(measurements, "client", lambda: store)
    cluster = running.cluster
    set_cluster(cluster, has_accounting=True).save()
    store.hset(f"{measurements.PREFIX}heard", cluster.name, str(time.time() - 74))
    controller = {"down": True}

    def run(cluster, account, argv, **kwargs):
        if argv[0] == "sacct":
            return CommandResult(0, "77|RUNNING|0:0|2026-11-21T10:00:00|Unknown|None\n", "")
        if controller["down"]:
            return CommandResult(1, "", "squeue: error: Unable to contact slurm controller (connect failure)")
        return CommandResult(0, "77\n", "")

    monkeypatch.setattr(ssh, "run", run)
    assert poll_cluster(cluster.pk)["heard"] is False
    assert "No answer from" in login(alice).get(running.get_absolute_url()).content.decode()
    assert "slurmctld did not answer" in json.loads(store.hashes[f"{measurements.PREFIX}polls"][cluster.name])["note"]

    controller["down"] = False
    assert poll_cluster(cluster.pk)["heard"] is True
    assert "No answer from" not in login(alice).get(running.get_absolute_url()).content.decode()
