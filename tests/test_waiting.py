"""Why am I waiting: SLURM's `squeue --start` and `sprio` output and slurmrestd's job list, recorded from the local
cluster (tests/fixtures/slurm/, tests/fixtures/slurm_rest/jobs_queue_v0.0.38.json), read into the queue view; the
advice worked out from it; the poll storing it once per cycle; the job page and the API showing it.

The recording: job 20 runs on 2 of the node's 4 GPUs for 50 min, job 23 on 1 GPU for 10 min; job 21 (4 GPUs) waits
for Resources, job 22 (1 GPU, 60 min) behind it for Priority; job 24 (2 GPUs, partitions gpu,debug) is planned by
backfill for when job 23 ends. Jobs 10 and 17-19 are CPU-only jobs of another user.
"""

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from clusters.backends.base import NotSupported
from clusters.backends.kinds.slurm.queue import NO_MULTIFACTOR, parse_sprio, parse_squeue_start, queue_view
from clusters.backends.kinds.slurm_rest import parsing, versions
from clusters.backends.queue import QueuedJob, QueueView
from clusters.limits import PartitionLimits
from core.choices import JobState
from jobs import polling
from jobs.models import Job, JobTemplate, JobWait
from jobs.wait_advice import Cycle, advise

from .fakes import FakeBackend

FIXTURES = Path(__file__).parent / "fixtures"
SQUEUE = (FIXTURES / "slurm" / "squeue_start.txt").read_text()
SPRIO = (FIXTURES / "slurm" / "sprio.txt").read_text()
LIMITS = {
    "debug": PartitionLimits(name="debug", nodes=1, gpus_per_node=4, max_minutes=60, default=True),
    "gpu": PartitionLimits(name="gpu", nodes=1, gpus_per_node=4, max_minutes=120),
}
PARAMS = [
    {"name": "partition", "type": "choice", "label": "Partition", "default": "debug", "choices": ["debug", "gpu"]},
    {"name": "gpus_per_node", "type": "int", "label": "GPUs", "default": 1, "min": 1, "max": 4},
    {"name": "time_minutes", "type": "int", "label": "Time limit (minutes)", "default": 30, "min": 5, "max": 120},
]


def recorded_view() -> QueueView:
    return queue_view(SQUEUE, SPRIO)


def at_recording(view: QueueView, seconds: int = 12):
    """The moment the recording was made: seconds after the last job started."""
    return max(job.start_at for job in view.running()) + timedelta(seconds=seconds)


# -- reading SLURM's output -----------------------------------------------------------------------------------------


def test_squeue_start_gives_pending_jobs_their_estimate_and_running_jobs_their_gpus_and_end():
    jobs = {job.scheduler_id: job for job in parse_squeue_start(SQUEUE)}
    assert sorted(jobs) == ["10", "17", "18", "19", "20", "21", "22", "23", "24"]
    waiting_for_gpus = jobs["21"]
    assert waiting_for_gpus.state == JobState.PENDING and waiting_for_gpus.gpus_per_node == 4
    assert waiting_for_gpus.start_at == jobs["20"].end_at  # SLURM plans it for when job 20 reaches its limit
    assert waiting_for_gpus.reason == "The GPUs or cores it asks for are in use by running jobs."
    assert waiting_for_gpus.for_resources and waiting_for_gpus.nodes == ("vm",)
    behind = jobs["22"]
    assert (behind.time_limit_minutes, behind.priority, behind.reason.split()[0]) == (60, 11531, "Jobs")
    running = jobs["20"]
    assert (running.state, running.gpus_per_node, running.nodes) == ("running", 2, ("vm",))
    assert running.end_at is not None
    assert jobs["10"].gpus_per_node == 0  # "N/A": no GRES
    assert jobs["24"].partition == "gpu"  # "gpu,debug": counted in the first partition it names


def test_sprio_factors_are_named_and_largest_first_and_a_job_in_two_partitions_keeps_its_first_line():
    factors = parse_sprio(SPRIO)
    assert factors["21"] == (("Fair share", 10000), ("Partition", 1000), ("Job size", 531))
    assert set(factors) == {"21", "22", "24"}
    view = recorded_view()
    assert view.has_factors and dict(view.jobs[-1].factors or factors["22"])["Fair share"] == 10000


def test_a_cluster_without_multifactor_priority_gives_a_view_without_factors():
    refusal = (FIXTURES / "slurm" / "sprio_basic.txt").read_text()  # sprio's words under priority/basic
    assert NO_MULTIFACTOR in refusal  # what SlurmBackend.queue() takes for "no factors here", not a failure
    view = queue_view(SQUEUE, None)
    assert not view.has_factors and all(job.factors == () for job in view.pending())


def test_slurmrestd_job_list_gives_the_same_view_with_priority_and_no_factors():
    answer = json.loads((FIXTURES / "slurm_rest" / "jobs_queue_v0.0.38.json").read_text())
    view = parsing.queue_view(answer, versions.VERSIONS[0])
    jobs = {job.scheduler_id: job for job in view.jobs}
    assert jobs["26"].state == "pending" and jobs["26"].gpus_per_node == 1 and jobs["26"].priority == 11531
    assert jobs["26"].start_at == jobs["25"].end_at  # slurmctld's estimate: when the 4-GPU job reaches its limit
    assert jobs["26"].for_resources and jobs["25"].gpus_per_node == 4 and jobs["25"].nodes == ("vm",)
    assert not view.has_factors and "not what makes it" in view.note


# -- the advice -----------------------------------------------------------------------------------------------------


@pytest.fixture
def template(db, course):
    template = JobTemplate.objects.create(
        name="Train",
        slug="train",
        body="python train.py\n",
        parameters=PARAMS,
        max_gpus=4,
        max_minutes=120,
        status=JobTemplate.Status.PUBLISHED,
    )
    template.courses.add(course)
    return template


@pytest.fixture
def pending_job(db, template, course, cluster, alice):
    def make(scheduler_id: str, gpus: int, minutes: int) -> Job:
        params = {"partition": "debug", "gpus_per_node": gpus, "time_minutes": minutes}
        return Job.objects.create(
            owner=alice,
            course=course,
            template=template,
            cluster=cluster,
            params=params,
            script="x",
            gpus=gpus,
            state=JobState.PENDING,
            scheduler_id=scheduler_id,
        )

    return make


def test_positions_follow_slurms_order_in_each_partition(pending_job):
    view = recorded_view()
    cycle = Cycle(view, LIMITS, at_recording(view))
    assert cycle.position(cycle.by_id["21"]) == (1, 2)
    assert cycle.position(cycle.by_id["22"]) == (2, 2)
    assert cycle.position(cycle.by_id["24"]) == (1, 1)
    assert cycle.free_gpus("debug") == 1  # 4 on the node, 2 + 1 held by jobs 20 and 23


def test_a_job_too_long_for_the_gap_before_the_job_ahead_is_told_the_limit_that_backfills_it(pending_job):
    view = recorded_view()
    now = at_recording(view)
    cycle = Cycle(view, LIMITS, now)
    window = int((cycle.by_id["21"].start_at - now).total_seconds() // 60)
    advice = advise(pending_job("22", 1, 60), cycle.by_id["22"], cycle)
    assert advice.suggested == {"time_minutes": window}
    assert f"a time limit of {window} minutes or less" in advice.sentences[0]
    assert "1 GPU is free now" in advice.sentences[0]


def test_a_job_asking_more_gpus_than_are_free_is_told_how_many_would_start_now(pending_job):
    view = recorded_view()
    cycle = Cycle(view, LIMITS, at_recording(view))
    advice = advise(pending_job("21", 4, 30), cycle.by_id["21"], cycle)
    assert advice.suggested == {"gpus_per_node": 1}
    assert advice.sentences == ["1 GPU is free now: with 1 GPU instead of 4 SLURM could start it now (backfill)."]


def test_no_advice_when_every_gpu_is_busy_or_the_template_allows_nothing_smaller(pending_job, template):
    hour = timezone.now() + timedelta(hours=1)
    holder = QueuedJob("1", "running", "debug", gpus_per_node=4, nodes=("vm",), end_at=hour)
    waiter = QueuedJob("2", "pending", "debug", gpus_per_node=1, time_limit_minutes=30, for_resources=True)
    busy = QueueView(jobs=(holder, waiter))
    cycle = Cycle(busy, LIMITS, timezone.now())
    advice = advise(pending_job("2", 1, 30), cycle.by_id["2"], cycle)
    assert advice.suggested == {} and "would not start it sooner" in advice.sentences[0]
    assert "in 59 min" in advice.sentences[0] or "in 60 min" in advice.sentences[0]
    template.parameters = [{**p, "min": 4, "default": 4} if p["name"] == "gpus_per_node" else p for p in PARAMS]
    template.save()
    view = recorded_view()
    cycle = Cycle(view, LIMITS, at_recording(view))
    job = Job.objects.select_related("template").get(pk=pending_job("21", 4, 30).pk)
    advice = advise(job, cycle.by_id["21"], cycle)
    assert advice.suggested == {} and "its template allows no smaller job" in advice.sentences[0]


def test_without_partition_limits_or_a_queue_order_nothing_is_suggested(pending_job):
    view = recorded_view()
    cycle = Cycle(view, {}, at_recording(view))
    assert advise(pending_job("21", 4, 30), cycle.by_id["21"], cycle).suggested == {}
    unordered = QueueView(jobs=(QueuedJob("k/1", "pending", reason="Not scheduled"),), ordered=False)
    cycle = Cycle(unordered, LIMITS, timezone.now())
    assert cycle.position(cycle.by_id["k/1"]) is None


# -- the poll stores it once per cycle ------------------------------------------------------------------------------


class QueueingBackend(FakeBackend):
    view: QueueView | None = None
    queue_calls = 0

    def queue(self):
        QueueingBackend.queue_calls += 1
        if QueueingBackend.view is None:
            raise NotSupported("no queue")
        return QueueingBackend.view


@pytest.fixture
def queueing(fake_backend, monkeypatch):
    from clusters.kinds import kind_of

    monkeypatch.setattr(kind_of("slurm"), "backend_class", QueueingBackend)
    QueueingBackend.view, QueueingBackend.queue_calls = None, 0
    return QueueingBackend


def _pending_status(scheduler_id):
    from clusters.backends.base import SchedulerStatus

    return SchedulerStatus(scheduler_id, JobState.PENDING, "PENDING", "Resources")


def test_the_poll_asks_the_queue_once_for_all_pending_jobs_and_stores_their_wait(queueing, pending_job, cluster):
    cluster.partition_limits = {name: limits.as_dict() for name, limits in LIMITS.items()}
    cluster.save()
    jobs = [pending_job("21", 4, 30), pending_job("22", 1, 60)]
    for job in jobs:
        queueing.statuses[job.scheduler_id] = _pending_status(job.scheduler_id)
    queueing.view = recorded_view()
    polling.poll_cluster(cluster.pk)
    polling.poll_cluster(cluster.pk)
    assert queueing.queue_calls == 2  # once per cycle, whatever the number of pending jobs
    first, second = (JobWait.objects.get(job=job) for job in jobs)
    assert (first.position, first.pending_in_partition, second.position) == (1, 2, 2)
    assert first.estimated_start == queueing.view.jobs[6].start_at or first.estimated_start is not None
    assert first.suggested == {"gpus_per_node": 1} and dict(second.factors)["Fair share"] == 10000


def test_a_job_that_left_pending_loses_its_wait_and_a_cluster_without_a_queue_keeps_the_old_one(
    queueing, pending_job, cluster
):
    job = pending_job("21", 4, 30)
    queueing.statuses["21"] = _pending_status("21")
    queueing.view = recorded_view()
    polling.poll_cluster(cluster.pk)
    said_at = JobWait.objects.get(job=job).observed_at
    queueing.view = None  # the queue cannot be read this cycle: what was said stays, with its time
    polling.poll_cluster(cluster.pk)
    assert JobWait.objects.get(job=job).observed_at == said_at
    from clusters.backends.base import SchedulerStatus

    queueing.statuses["21"] = SchedulerStatus("21", JobState.RUNNING, "RUNNING")
    polling.poll_cluster(cluster.pk)
    assert not JobWait.objects.filter(job=job).exists()


# -- the page and the API -------------------------------------------------------------------------------------------


def _stored_wait(job, **fields):
    defaults = {
        "observed_at": timezone.now() - timedelta(seconds=20),
        "reason": "The GPUs or cores it asks for are in use by running jobs.",
        "partition": "debug",
        "position": 2,
        "pending_in_partition": 3,
        "estimated_start": timezone.now() + timedelta(minutes=42),
        "priority": 11531,
        "factors": [["Fair share", 10000], ["Partition", 1000]],
        "advice": ["1 GPU is free now: with 1 GPU instead of 4 SLURM could start it now (backfill)."],
        "suggested": {"gpus_per_node": 1},
    }
    return JobWait.objects.create(job=job, **{**defaults, **fields})


def test_the_job_page_shows_place_estimate_factors_advice_and_age(pending_job, login, alice):
    job = pending_job("21", 4, 30)
    _stored_wait(job, observed_at=timezone.now() - timedelta(seconds=5))
    body = login(alice).get(f"/jobs/{job.pk}/status/").content.decode()
    assert "<strong>2</strong> of 3 waiting in partition debug" in body
    assert "in 41 min" in body or "in 42 min" in body
    assert "Fair share 10000" in body and "said under a minute ago" in body
    assert f"/jobs/{job.pk}/clone/?sooner=1" in body and "Launch again with GPUs 1" in body
    assert 'id="wait-stale"' not in body


def test_an_old_wait_is_marked_out_of_date(pending_job, login, alice):
    job = pending_job("21", 4, 30)
    _stored_wait(job, observed_at=timezone.now() - timedelta(minutes=10))
    body = login(alice).get(f"/jobs/{job.pk}/status/").content.decode()
    assert "said 10 min ago" in body and 'id="wait-stale"' in body


def test_launch_again_opens_the_form_with_the_values_that_start_it_sooner(pending_job, login, alice, course):
    job = pending_job("21", 4, 30)
    _stored_wait(job)
    client = login(alice)
    page = client.get(f"/jobs/{job.pk}/clone/?sooner=1", follow=True)
    body = page.content.decode()
    assert "made to start sooner than" in body
    assert 'name="param_gpus_per_node" value="1"' in body or 'value="1" name="param_gpus_per_node"' in body


def test_another_student_cannot_read_the_wait(pending_job, login, bob, api_for):
    job = pending_job("21", 4, 30)
    _stored_wait(job)
    assert login(bob).get(f"/jobs/{job.pk}/status/").status_code == 404
    assert api_for(bob).get(f"/api/v1/jobs/{job.pk}/").status_code == 404


def test_the_api_gives_the_wait_of_pending_jobs_with_constant_queries(
    pending_job, api_for, alice, django_assert_max_num_queries
):
    jobs = [pending_job(str(100 + n), 4, 30) for n in range(12)]
    for job in jobs:
        _stored_wait(job)
    client = api_for(alice)
    detail = client.get(f"/api/v1/jobs/{jobs[0].pk}/").json()["wait"]
    assert (detail["position"], detail["pending_in_partition"], detail["factors"]["Fair share"]) == (2, 3, 10000)
    assert detail["estimated_start"] and detail["age_seconds"] >= 20 and detail["suggested"] == {"gpus_per_node": 1}
    with django_assert_max_num_queries(8):
        listed = client.get("/api/v1/jobs/?state=pending").json()
    assert all(item["wait"]["position"] == 2 for item in listed["results"])


def test_job_lists_show_a_pending_jobs_place_without_more_queries(pending_job, login, alice):
    first = pending_job("200", 1, 30)
    _stored_wait(first, position=4, pending_in_partition=9)
    client = login(alice)
    client.get("/jobs/")  # session and caches warm
    few = _queries_of(client, "/jobs/")
    for n in range(10):
        _stored_wait(pending_job(str(300 + n), 1, 30))
    assert _queries_of(client, "/jobs/") == few
    body = client.get("/jobs/").content.decode()
    assert "4 of 9 in debug" in body and body.count("2 of 3 in debug") == 10


def _queries_of(client, url: str) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


def test_a_pending_jobs_panel_is_not_sent_again_for_a_ticking_second(pending_job):
    from jobs import status_panel
    from jobs.views.jobs import _status_context

    job = pending_job("21", 4, 30)
    wait = _stored_wait(job, observed_at=timezone.now() - timedelta(seconds=2))
    before = status_panel.render_panel(_status_context(job)).seen
    JobWait.objects.filter(pk=wait.pk).update(observed_at=timezone.now() - timedelta(seconds=8))  # a poll later
    assert status_panel.render_panel(_status_context(job)).seen == before
    JobWait.objects.filter(pk=wait.pk).update(position=1)  # what it shows changed: sent again
    assert status_panel.render_panel(_status_context(job)).seen != before
