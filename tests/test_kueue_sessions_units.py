"""Lab sessions on Kueue without an API server: the raised course ClusterQueue as data checked against Kueue's
published schema, what a launch keeps of a raise, and what a Kueue session leaves alone on the jobs' side (no
reservation to submit into, no waiting jobs to move). The cluster side is tests/integration/test_k8s_kueue_sessions.py.
"""

import html
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from clusters.backends.kinds.kubernetes import crds, kueue
from clusters.backends.kinds.kubernetes.kueue_sessions import gpu_quota, keep_raise, raised, session_raise
from clusters.models import Cluster
from courses import lab_sessions
from courses.models import LabSession, LabSessionState
from jobs import lab_session_jobs

pytestmark = pytest.mark.django_db


@pytest.fixture
def kueue_cluster(course):
    cluster = Cluster.objects.create(
        name="kq",
        kind="kubernetes",
        kind_settings={"kube_addons": {"kueue": True}, "kueue_cohort": "lab"},
        lab_reservations=True,
    )
    course.clusters.add(cluster)
    return cluster


@pytest.fixture
def plan(course, alice, bob, kueue_cluster) -> dict:
    return kueue.plan_for(course, kueue_cluster).cluster_queue


def test_a_raise_adds_the_sessions_gpus_to_the_planned_quota_and_names_the_session(plan):
    queue = raised(plan, "gpulab-hpc-7", 3)
    crds.validate(queue)  # what Kueue's API server would take
    assert gpu_quota(queue) == {"name": "nvidia.com/gpu", "nominalQuota": 11}  # 4 GPUs x 2 students, and 3
    assert session_raise(queue) == ("gpulab-hpc-7", 3)
    assert gpu_quota(plan)["nominalQuota"] == 8  # the plan itself is left as it was


def test_a_launch_keeps_the_raise_the_queue_on_the_cluster_carries_and_nothing_else(plan):
    on_cluster = raised(plan, "gpulab-hpc-7", 3)
    assert gpu_quota(keep_raise(on_cluster, plan))["nominalQuota"] == 11
    edited = {**plan, "metadata": {**plan["metadata"], "annotations": {"note": "an admin's"}}}
    assert keep_raise(edited, plan) is plan
    assert keep_raise(None, plan) is plan


def test_annotations_that_are_not_a_count_raise_nothing():
    queue = {"metadata": {"annotations": {"gpulab.io/lab-session": "gpulab-x-1", "gpulab.io/lab-session-gpus": "a"}}}
    assert session_raise(queue) == ("gpulab-x-1", 0)
    assert session_raise({"metadata": {"annotations": {"gpulab.io/lab-session-gpus": "-4"}}}) == ("", 0)


def test_the_quota_of_the_named_flavor_is_the_one_read(plan):
    queue = raised(plan, "gpulab-hpc-7", 1)
    assert gpu_quota(queue, "default-flavor") is not None and gpu_quota(queue, "a100") is None


def test_a_kueue_session_gives_jobs_no_reservation_and_moves_no_waiting_job(course, kueue_cluster, alice):
    now = timezone.now()
    session = LabSession.objects.create(
        course=course, cluster=kueue_cluster, starts_at=now, ends_at=now + timedelta(minutes=30), gpus=2
    )
    LabSession.objects.filter(pk=session.pk).update(state=LabSessionState.HELD, gpus_held=2)
    assert lab_sessions.reservation_for(course.pk, kueue_cluster.pk) == ""  # the queue holds the GPUs, not a name
    assert lab_session_jobs.due() == []
    assert lab_sessions.holding_kinds(applied_while_on=True) == ["kubernetes"]
    assert set(lab_sessions.holding_kinds(jobs_go_in=True)) == {"slurm"}


def test_the_booking_page_says_what_a_session_does_on_each_kind(login, instructor, course, kueue_cluster, cluster):
    cluster.lab_reservations = True
    cluster.save()
    page = html.unescape(login(instructor).get(reverse("courses:lab_sessions", args=[course.slug])).content.decode())
    assert "During a session on kq the course's Kueue queue gets the session's GPUs on top of its quota" in page
    assert "During a session on Local SLURM the GPUs are held for this course alone" in page
