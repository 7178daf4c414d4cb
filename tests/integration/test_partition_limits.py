"""Partition limits on the real SLURM: learnt at Test connection and by the scheduled task, jobs that cannot fit
refused at launch, and a job SLURM holds for a reason that cannot clear flagged, released from the quota and
cancelled after the grace period by the real worker.

The local cluster is shared: a partition limit this test lowers is put back in `finally` within seconds.
"""

import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.urls import reverse

from clusters.models import Cluster
from jobs.models import Job, JobTemplate
from workers.tasks import refresh_cluster_limits

from .conftest import slurm, wait_for

# It changes the gpu partition's time limit for everyone: alone on the node, with no other test asking SLURM.
pytestmark = pytest.mark.slurm_outage

GRACE_SECONDS = 6


@pytest.fixture
def sized_template(course):
    template = JobTemplate.objects.create(
        name="Sized sleep",
        slug="sized-sleep",
        body="sleep {{ seconds }}\necho slept\n",
        parameters=[
            {"name": "partition", "type": "choice", "label": "Partition", "default": "debug"},
            {"name": "nodes", "type": "int", "label": "Nodes", "default": 1, "min": 1, "max": 4},
            {"name": "gpus_per_node", "type": "int", "label": "GPUs", "default": 0, "min": 0, "max": 8},
            {"name": "time_minutes", "type": "int", "label": "Time", "default": 2, "min": 1, "max": 240},
            {"name": "seconds", "type": "int", "label": "Seconds", "default": 1, "min": 0, "max": 600},
        ],
        status=JobTemplate.Status.PUBLISHED,
        max_nodes=4,
        max_gpus=32,
        max_minutes=240,
    )
    template.courses.add(course)
    return template


def local_limits() -> dict:
    """What the portal must learn, read from SLURM directly (as root): nodes and time of each partition."""
    found = {}
    for line in slurm("scontrol", "show", "partition", "--oneliner").splitlines():
        fields = dict(re.findall(r"(\w+)=(\S+)", line))
        hours, minutes, _ = fields["MaxTime"].split(":")
        found[fields["PartitionName"]] = {
            "nodes": int(fields["TotalNodes"]),
            "max_minutes": int(hours) * 60 + int(minutes),
        }
    return found


def test_admin_test_connection_and_the_schedule_learn_each_partitions_limits(login, admin_user, cluster):
    response = login(admin_user).get(reverse("admin:cluster_test", args=[cluster.pk]))
    assert response.status_code == 200
    cluster.refresh_from_db()
    learnt = cluster.partition_limits
    expected = local_limits()
    assert {name: {k: learnt[name][k] for k in ("nodes", "max_minutes")} for name in learnt} == expected
    assert learnt["debug"]["default"] and learnt["gpu"]["gpus_per_node"] == 4  # Gres=gpu:demo:4 on the one node
    assert "partition gpu: 1 node(s)" in response.content.decode()

    Cluster.objects.filter(pk=cluster.pk).update(partition_limits={}, partition_limits_at=None)
    refresh_cluster_limits(cluster.pk)  # what beat runs every PARTITION_LIMITS_REFRESH_SECONDS
    cluster.refresh_from_db()
    assert cluster.partition_limits == learnt and cluster.partition_limits_at is not None
    assert settings.CELERY_BEAT_SCHEDULE["refresh-partition-limits"]["task"] == "workers.tasks.refresh_partition_limits"


def test_launching_more_nodes_than_the_partition_has_is_refused_in_words(api_for, alice, cluster, sized_template):
    refresh_cluster_limits(cluster.pk)
    body = {"template": "sized-sleep", "cluster": "local", "params": {"partition": "gpu", "nodes": 2}}
    response = api_for(alice).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400
    assert response.json()["params"]["nodes"] == ["Partition gpu has 1 node; this job asks for 2. Lower Nodes to 1."]
    assert not Job.objects.exists()


@pytest.fixture
def short_grace_worker(worker):
    """The session's worker, restarted with a short grace period for jobs SLURM will never start."""
    worker.stop()
    worker.start(NEVER_STARTS_GRACE_SECONDS=str(GRACE_SECONDS))
    yield worker
    worker.stop()
    worker.start()


@pytest.mark.timeout(240)
def test_a_job_slurm_will_never_start_is_flagged_released_and_cancelled_after_the_grace_period(
    short_grace_worker, api_for, login, alice, course, cluster, sized_template, job_state
):
    course.max_concurrent_jobs = 1
    course.save()
    refresh_cluster_limits(cluster.pk)  # learnt: gpu allows 120 minutes
    original = re.search(r"MaxTime=(\S+)", slurm("scontrol", "show", "partition", "gpu", "--oneliner")).group(1)
    client = api_for(alice)
    try:
        # An admin lowers the partition's time limit after the portal learnt it: the launch passes, SLURM holds the job.
        slurm("scontrol", "update", "PartitionName=gpu", "MaxTime=3")
        body = {"template": "sized-sleep", "cluster": "local", "params": {"partition": "gpu", "time_minutes": 5}}
        response = client.post("/api/v1/jobs/", body, format="json")
        assert response.status_code == 201, response.content
        job = Job.objects.get(pk=response.json()["id"])

        flagged = wait_for(
            lambda: Job.objects.filter(pk=job.pk, never_starts_since__isnull=False).first(),
            timeout=60,
            what="the job to be flagged as never starting",
        )
        assert flagged.state == "pending" and "(PartitionTimeLimit)" in flagged.never_starts_reason
        page = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert "SLURM will never start this job: its time limit is longer than its partition allows" in page

        # Released from the quota: the course allows one unfinished job, and another launch is accepted.
        other = {"template": "sized-sleep", "cluster": "local", "params": {"partition": "debug"}}
        assert client.post("/api/v1/jobs/", other, format="json").status_code == 201

        cancelled = job_state(job, "cancelled", timeout=90)
    finally:
        slurm("scontrol", "update", "PartitionName=gpu", f"MaxTime={original}")
    assert re.search(r"MaxTime=(\S+)", slurm("scontrol", "show", "partition", "gpu", "--oneliner")).group(1) == original
    events = list(cancelled.events.values_list("kind", "message"))
    note = cancelled.events.filter(kind="cancel", message__startswith="Cancelled by the portal").first()
    assert note is not None, events
    assert "(PartitionTimeLimit)" in note.message
    assert note.at >= flagged.never_starts_since + timedelta(seconds=GRACE_SECONDS)  # not before the grace ran out
    assert cancelled.error.startswith("The job was cancelled: SLURM will never start this job")
    assert "CANCELLED" in slurm(
        "squeue", "--states=all", "--noheader", f"--jobs={cancelled.scheduler_id}", "--format=%T"
    )
