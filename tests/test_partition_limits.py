"""Partition limits: parsed from sinfo, refused at launch in words, and jobs SLURM will never start flagged,
released from the quota and cancelled after the grace period (the jobs side with a fake at the backend interface;
tests/integration/test_partition_limits.py does it all on the real SLURM)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from clusters.backends.base import PartitionLimits, SchedulerStatus
from clusters.backends.kinds.slurm.backend import SlurmBackend, parse_minutes, parse_partitions
from clusters.backends.slurm_family.states import never_starts
from clusters.backends.ssh import CommandResult
from clusters.models import Cluster
from jobs import never_starts as never_starts_jobs
from jobs import polling
from jobs.cancellation import cancel_never_starting
from jobs.models import Job, JobTemplate

# Recorded on the local cluster (scripts/local_slurm.sh, SLURM 22.05):
# `sinfo --all --noheader --format=%P|%D|%s|%l|%G`, then again after `scontrol update PartitionName=gpu MaxNodes=1`.
LOCAL_SINFO = "debug*|1|1-infinite|1:00:00|gpu:demo:4\ngpu|1|1-infinite|2:00:00|gpu:demo:4\n"
LOCAL_SINFO_MAXNODES_1 = "debug*|1|1-infinite|1:00:00|gpu:demo:4\ngpu|1|1|2:00:00|gpu:demo:4\n"
# `squeue --states=all --noheader --jobs=39,40 --format=%i|%T|%r|%S|%e` for `sbatch -N2 -p gpu` and
# `sbatch --time=90 -p debug` on that cluster.
LOCAL_SQUEUE_NEVER = "40|PENDING|PartitionTimeLimit|N/A|N/A\n39|PENDING|PartitionNodeLimit|N/A|N/A\n"

pytestmark = pytest.mark.django_db


def test_local_partitions_are_parsed_with_the_default_marked():
    limits = parse_partitions(LOCAL_SINFO)
    assert limits == {
        "debug": PartitionLimits(
            "debug", nodes=1, gpus_per_node=4, max_nodes_per_job=None, max_minutes=60, default=True
        ),
        "gpu": PartitionLimits("gpu", nodes=1, gpus_per_node=4, max_nodes_per_job=None, max_minutes=120),
    }
    assert parse_partitions(LOCAL_SINFO_MAXNODES_1)["gpu"].max_nodes_per_job == 1


def test_partition_lines_of_unlike_nodes_add_up():
    # sinfo's format with two node groups in one partition (different GRES, one group drained), as a larger cluster
    # prints it; hand-written in that format.
    text = (
        "a100*|3|1-2|2-00:00:00|gpu:a100:4(S:0-1)\n"
        "a100*|1|1-2|2-00:00:00|gpu:a100:8(S:0-1)\n"
        "cpu|16|1-infinite|infinite|(null)\n"
    )
    limits = parse_partitions(text)
    assert limits["a100"] == PartitionLimits("a100", 4, 8, max_nodes_per_job=2, max_minutes=2880, default=True)
    assert limits["cpu"] == PartitionLimits("cpu", 16, 0, max_nodes_per_job=None, max_minutes=None)


@pytest.mark.parametrize(
    ("text", "minutes"),
    [("30", 30), ("30:00", 30), ("1:00:00", 60), ("1-00:00:00", 1440), ("2-12", 3600), ("infinite", None), ("?", None)],
)
def test_slurm_durations_in_minutes(text, minutes):
    assert parse_minutes(text) == minutes


def test_reasons_that_cannot_clear_are_named_and_the_others_are_not():
    assert never_starts("PartitionNodeLimit").startswith("SLURM will never start this job: it asks for more nodes")
    assert "(QOSMaxWallDurationPerJobLimit)" in never_starts("QOSMaxWallDurationPerJobLimit")
    for may_clear in ("Resources", "Priority", "ReqNodeNotAvail, UnavailableNodes:vm", "QOSMaxJobsPerUserLimit", ""):
        assert never_starts(may_clear) == ""


def test_poll_marks_pending_jobs_slurm_will_never_start():
    backend = SlurmBackend(Cluster(name="local", host="127.0.0.1"), account=None)
    backend._run = lambda argv: CommandResult(0, LOCAL_SQUEUE_NEVER, "")
    statuses = backend.poll(["39", "40"])
    assert "(PartitionNodeLimit)" in statuses["39"].never_starts
    assert "(PartitionTimeLimit)" in statuses["40"].never_starts


def test_test_connection_report_carries_the_limits():
    backend = SlurmBackend(Cluster(name="local", host="127.0.0.1"), account=type("A", (), {"username": "labsvc"}))
    answers = {"sinfo --version": "slurm-wlm 22.05.8", "sinfo --all": LOCAL_SINFO}
    backend._run = lambda argv: CommandResult(
        0, next((v for k, v in answers.items() if " ".join(argv).startswith(k)), ""), ""
    )
    report = backend.test_connection()
    assert report.facts["partition_limits"]["gpu"]["max_minutes"] == 120
    assert "partition debug (default): 1 node(s), no per-job node limit, 4 GPU(s) per node, at most 60 minutes" in (
        report.lines
    )


@pytest.fixture
def sized_template(course):
    template = JobTemplate.objects.create(
        name="Sized",
        slug="sized",
        body="echo hi\n",
        parameters=[
            {"name": "partition", "type": "choice", "label": "Partition", "default": "debug"},
            {"name": "nodes", "type": "int", "label": "Nodes", "default": 1, "min": 1, "max": 4},
            {"name": "gpus_per_node", "type": "int", "label": "GPUs", "default": 0, "min": 0, "max": 8},
            {"name": "time_minutes", "type": "int", "label": "Time", "default": 5, "min": 1, "max": 240},
        ],
        status=JobTemplate.Status.PUBLISHED,
        max_nodes=4,
        max_gpus=32,
        max_minutes=240,
    )
    template.courses.add(course)
    return template


@pytest.fixture
def limited_cluster(cluster):
    cluster.partition_limits = {name: p.as_dict() for name, p in parse_partitions(LOCAL_SINFO_MAXNODES_1).items()}
    cluster.save()
    return cluster


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        (
            {"partition": "debug", "nodes": 2},
            "nodes",
            "Partition debug has 1 node; this job asks for 2. Lower Nodes to 1.",
        ),
        (
            {"partition": "gpu", "gpus_per_node": 6},
            "gpus_per_node",
            "Nodes of partition gpu have at most 4 GPUs; this job asks for 6 per node. Lower GPUs to 4.",
        ),
        (
            {"partition": "debug", "time_minutes": 90},
            "time_minutes",
            "Partition debug allows at most 60 minutes; this job asks for 90. Lower Time to 60.",
        ),
    ],
)
def test_launch_refuses_what_the_partition_can_never_run(
    api_for, alice, limited_cluster, sized_template, params, field, message
):
    body = {"template": "sized", "cluster": "local", "params": params}
    response = api_for(alice).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400
    assert response.json()["params"][field] == [message]
    assert not Job.objects.exists()


def test_launch_form_says_the_same(login, alice, limited_cluster, sized_template, course):
    data = {"cluster": limited_cluster.pk, "param_partition": "gpu", "param_nodes": 2, "param_gpus_per_node": 0}
    response = login(alice).post(f"/courses/{course.slug}/launch/sized/", data | {"param_time_minutes": 5})
    assert response.status_code == 400
    assert "Partition gpu has 1 node; this job asks for 2. Lower Nodes to 1." in response.content.decode()


def test_without_learnt_limits_nothing_is_refused_for_them(api_for, alice, cluster, sized_template):
    body = {"template": "sized", "cluster": "local", "params": {"nodes": 2}}
    assert api_for(alice).post("/api/v1/jobs/", body, format="json").status_code == 201


def pending(job, reason: str) -> SchedulerStatus:
    return SchedulerStatus(job.scheduler_id, "pending", "PENDING", reason=reason, never_starts=never_starts(reason))


@pytest.fixture
def pending_job(fake_backend, make_job, alice, course):
    course.max_concurrent_jobs = 1
    course.save()
    job = make_job(alice)
    Job.objects.filter(pk=job.pk).update(state="pending", scheduler_id="4242")
    return Job.objects.get(pk=job.pk)


def test_a_job_that_will_never_start_is_flagged_and_released_from_the_quota(
    pending_job, fake_backend, make_job, alice, api_for
):
    fake_backend.statuses["4242"] = pending(pending_job, "PartitionNodeLimit")
    polling.poll_cluster(pending_job.cluster_id)
    polling.poll_cluster(pending_job.cluster_id)  # a second poll changes nothing
    job = Job.objects.get(pk=pending_job.pk)
    assert job.never_starts_since and "(PartitionNodeLimit)" in job.never_starts_reason
    assert job.events.filter(kind="note", message__contains="no longer counts against the quota").count() == 1
    assert make_job(alice).state == "queued"  # the course allows one unfinished job; the flagged one holds nothing
    assert "(PartitionNodeLimit)" in api_for(alice).get(f"/api/v1/jobs/{job.pk}/").json()["never_starts_reason"]


def test_the_flag_goes_when_the_reason_clears(pending_job, fake_backend):
    fake_backend.statuses["4242"] = pending(pending_job, "PartitionTimeLimit")
    polling.poll_cluster(pending_job.cluster_id)
    fake_backend.statuses["4242"] = pending(pending_job, "Resources")  # an admin raised the partition's MaxTime
    polling.poll_cluster(pending_job.cluster_id)
    job = Job.objects.get(pk=pending_job.pk)
    assert job.never_starts_since is None
    assert job.events.filter(kind="note", message__contains="counts against the quota again").exists()


def test_after_the_grace_period_the_portal_cancels_with_an_event(pending_job, fake_backend, settings):
    fake_backend.statuses["4242"] = pending(pending_job, "PartitionNodeLimit")
    polling.poll_cluster(pending_job.cluster_id)
    assert never_starts_jobs.past_grace() == []  # within the grace period
    Job.objects.filter(pk=pending_job.pk).update(never_starts_since=timezone.now() - timedelta(seconds=901))
    due = never_starts_jobs.past_grace()
    assert [j.pk for j in due] == [pending_job.pk]
    assert cancel_never_starting(due[0]) and not cancel_never_starting(due[0])  # once
    job = Job.objects.get(pk=pending_job.pk)
    assert job.cancel_requested_at is not None
    note = job.events.get(kind="cancel")
    assert "SLURM will never start this job" in note.message and note.actor is None
    fake_backend.statuses["4242"] = SchedulerStatus("4242", "cancelled", "CANCELLED")
    polling.poll_cluster(job.cluster_id)
    job.refresh_from_db()
    assert job.state == "cancelled" and job.error.startswith("The job was cancelled: SLURM will never start this job")


def test_the_job_page_says_why_and_when(login, alice, pending_job, fake_backend):
    fake_backend.statuses["4242"] = pending(pending_job, "PartitionNodeLimit")
    polling.poll_cluster(pending_job.cluster_id)
    page = login(alice).get(f"/jobs/{pending_job.pk}/").content.decode()
    assert 'id="never-starts"' in page and "SLURM will never start this job" in page
    assert "no longer counts against the quota" in page and "the portal cancels it at" in page
    assert "will never start" in login(alice).get("/jobs/").content.decode()  # My jobs says so too
