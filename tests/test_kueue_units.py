"""Kueue pieces that need no API server: the course ClusterQueue as data checked against Kueue's published schema,
Workload conditions in words, and the start estimate learnt from the queue's earlier waits."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from clusters.backends.kinds.kubernetes import kueue, kueue_status
from clusters.backends.kinds.kubernetes.manifests import ManifestError
from clusters.models import Cluster
from core.choices import JobState
from core.course_choices import KueuePreemption
from jobs import queue_history
from tests.kind_settings import set_course


@pytest.fixture
def kueue_cluster(db):
    return Cluster(name="kq", kind="kubernetes", kind_settings={"kube_addons": {"kueue": True}, "kueue_cohort": "lab"})


def test_a_managed_course_queue_takes_its_quota_limits_and_policy_from_the_course(course, alice, bob, kueue_cluster):
    set_course(course, kueue_borrowing_limit=2, kueue_lending_limit=1, kueue_preemption=KueuePreemption.NEVER)
    plan = kueue.plan_for(course, kueue_cluster)
    spec = plan.cluster_queue["spec"]
    (gpus,) = [r for r in spec["resourceGroups"][0]["flavors"][0]["resources"] if r["name"] == "nvidia.com/gpu"]
    assert gpus == {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 2, "lendingLimit": 1}
    assert spec["cohort"] == "lab" and spec["preemption"]["reclaimWithinCohort"] == "Never"
    assert plan.local_queue == "gpulab-hpc"
    set_course(course, kueue_local_queue="team-a")
    assert kueue.plan_for(course, kueue_cluster).cluster_queue is None  # an admin's queue, only checked
    assert kueue.plan_for(course, Cluster(name="plain", kind="kubernetes")) is None


def test_a_queue_kueue_would_refuse_is_never_sent():
    with pytest.raises(
        ManifestError, match=re.escape("is not valid Kueue kueue.x-k8s.io/v1beta1: spec: 'clusterQueue'")
    ):
        kueue.checked({"apiVersion": kueue.KUEUE, "kind": "LocalQueue", "metadata": {"name": "q"}, "spec": {}})
    bad = {"withinClusterQueue": "Sometimes"}
    with pytest.raises(ManifestError, match=re.escape("spec.preemption.withinClusterQueue")):
        kueue.checked(
            {"apiVersion": kueue.KUEUE, "kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": {"preemption": bad}}
        )


def test_a_job_for_a_queue_is_labelled_suspended_and_must_carry_its_job_name():
    job = {"kind": "Job", "metadata": {"name": "gpulab-12345678"}, "spec": {"template": {}}}
    kueue.put_in_queue([job], "gpulab-hpc", "gpulab-12345678")
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpulab-hpc" and job["spec"]["suspend"] is True
    with pytest.raises(ManifestError, match="must be named"):
        kueue.put_in_queue([{"kind": "Job", "metadata": {"name": "mine"}, "spec": {}}], "q", "gpulab-12345678")


def test_a_queue_that_can_never_hold_the_job_says_so():
    message = (
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor f, request > "
        "maximum capacity of quota (4)"
    )
    workload = {"status": {"conditions": [{"type": "QuotaReserved", "status": "False", "message": message}]}}
    status = kueue_status.waiting("ns/x", workload)
    assert (
        status.state == JobState.PENDING and "more nvidia.com/gpu than the course's whole queue" in status.never_starts
    )


def test_the_start_estimate_is_the_median_of_the_queues_last_waits(make_job, alice):
    now = timezone.now()
    job = make_job(alice, seconds=60)
    assert queue_history.estimate(job, now, {}).start is None  # no earlier waits: too few to tell
    for minutes in (2, 4, 6, 8, 100):
        earlier = make_job(alice, seconds=60)
        earlier.state, earlier.submitted_at = JobState.COMPLETED, now - timedelta(hours=2)
        earlier.started_at = earlier.submitted_at + timedelta(minutes=minutes)
        earlier.save()
    job.submitted_at = now - timedelta(minutes=1)
    learnt = queue_history.estimate(job, now, {})
    assert learnt.start == job.submitted_at + timedelta(minutes=6)
    assert learnt.note == "Estimated from the median wait (6 min) of this queue's last 5 jobs."
