"""Lab sessions on the real local SLURM (22.05): a booking made through the API becomes a reservation of the whole GPU
node that `scontrol show reservation` lists, the course's next job runs in it (as the service account, or as each
student's own user where jobs run so), cancelling removes it, the beat cleans an ended one, SLURM's own refusal
reaches the instructor in words, and Test connection says whether the service account may make them."""

import re
import subprocess
import time
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from clusters import services as cluster_services
from clusters.choices import RunAs
from clusters.kinds import get_backend
from courses import lab_reservations
from courses.models import LabSession, LabSessionState
from jobs.models import Job
from tests.integration.jobs_api import launch, read_whole_log

from . import test_cluster_identity as identity
from .conftest import slurm, wait_for

students, whoami = identity.students, identity.whoami  # the students' own UNIX users and a template that prints them


@pytest.fixture
def lab_cluster(cluster):
    cluster.lab_reservations = True
    cluster.save()
    cluster_services.refresh_partition_limits(cluster)
    cluster.refresh_from_db()
    yield cluster
    for session in LabSession.objects.filter(cluster=cluster):  # never leave the shared node reserved
        subprocess.run(["scontrol", "delete", "reservation", session.reservation_name], capture_output=True)


def book_now(api_for, instructor, course, cluster, minutes=15, gpus=2):
    start = timezone.now().replace(second=0, microsecond=0)
    body = {"cluster": cluster.name, "starts_at": start.isoformat(), "minutes": minutes, "gpus": gpus}
    response = api_for(instructor).post(f"/api/v1/courses/{course.slug}/lab-sessions/", body, format="json")
    assert response.status_code == 201, response.content
    return LabSession.objects.get(pk=response.json()["id"])


def state_of(session, *states, timeout=60):
    def reached():
        session.refresh_from_db()
        return session.state in states

    wait_for(reached, timeout=timeout, what=f"lab session {session.pk} to be {'/'.join(states)}")
    return session


def test_a_booked_session_holds_the_gpu_node_and_the_courses_next_job_runs_in_it(
    worker, api_for, instructor, alice, course, lab_cluster, sleep_template, job_state
):
    session = state_of(
        book_now(api_for, instructor, course, lab_cluster), LabSessionState.HELD, LabSessionState.REFUSED
    )
    assert session.state == LabSessionState.HELD, session.message
    shown = slurm("scontrol", "show", "reservation", "--oneliner", session.reservation_name)
    assert f"ReservationName={session.reservation_name}" in shown
    assert "Users=labsvc" in shown and "Nodes=" in shown  # 22.05: the whole node that holds the GPUs
    assert session.gpus_held == 4 and session.nodes  # the node's four GPUs, though two were booked
    events = list(session.events.values_list("to_state", flat=True))
    assert events == ["booked", "held"]

    job = job_state(launch(api_for, alice, seconds=120), "pending", "running", timeout=120)
    assert slurm("squeue", "-h", "-j", job.scheduler_id, "-o", "%v").strip() == session.reservation_name
    # It starts on the reserved node once jobs that ran there before the session (other users') leave room.
    job = job_state(job, "running", timeout=150)
    assert f"Reservation={session.reservation_name}" in slurm("scontrol", "show", "job", "--oneliner", job.scheduler_id)
    assert job.events.filter(message__endswith=f"in the lab session's reservation {session.reservation_name}.").exists()

    # Cancelled while its job still runs: SLURM will not delete a reservation in use, so it is ended at once.
    cancelled = api_for(instructor).delete(f"/api/v1/courses/{course.slug}/lab-sessions/{session.pk}/")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    wait_for(
        lambda: LabSession.objects.filter(pk=session.pk).exclude(removed_at=None).exists(),
        what="the cancelled session's reservation to be removed",
    )
    shown = slurm("scontrol", "show", "reservation", "--oneliner", session.reservation_name)
    ends = re.search(r"EndTime=(\S+)", shown)
    assert not ends or datetime.fromisoformat(ends.group(1)) <= datetime.now()  # it holds the node no more
    assert Job.objects.get(pk=job.pk).state == "running"  # the student's job runs on to its limit
    slurm("scancel", job.scheduler_id)
    wait_for(
        lambda: session.reservation_name not in slurm("scontrol", "show", "reservation"),
        timeout=120,
        what="SLURM to drop the ended reservation once its job is gone",
    )
    after = job_state(launch(api_for, alice, seconds=1), "pending", "running", "completed", timeout=120)
    assert slurm("squeue", "-h", "-j", after.scheduler_id, "-o", "%v").strip() in {"", "(null)"}


@pytest.mark.slurm_node  # it reserves the whole GPU node and queues a job in it, with no worker behind it
def test_making_the_reservation_again_adopts_it_and_slurms_refusal_is_told_in_words(
    api_for, instructor, course, other_course, lab_cluster, make_user
):
    session = LabSession.objects.create(
        course=course,
        cluster=lab_cluster,
        starts_at=timezone.now(),
        ends_at=timezone.now() + timedelta(minutes=15),
        gpus=1,
    )
    assert lab_reservations.make(session.pk) == "held"
    LabSession.objects.filter(pk=session.pk).update(state=LabSessionState.BOOKED)  # as if the answer was lost
    assert lab_reservations.make(session.pk) == "held"  # found by its name, not made twice
    assert slurm("scontrol", "show", "reservation").count("ReservationName=gpulab-") == 1

    # A second course's session over the same node at the same time: SLURM refuses it, the portal says why.
    other_course.clusters.add(lab_cluster)
    rival = LabSession.objects.create(
        course=other_course, cluster=lab_cluster, starts_at=session.starts_at, ends_at=session.ends_at, gpus=1
    )
    assert lab_reservations.make(rival.pk) == "refused"
    rival.refresh_from_db()
    assert rival.message.startswith("Another reservation on the cluster holds those nodes")
    assert "(SLURM: " in rival.message and "overlaps with another reservation" in rival.message

    # A job still waiting in it when the session goes leaves it first (else SLURM would hold it for good) and waits on.
    waiting = subprocess.run(
        ["runuser", "-u", "labsvc", "--", "sbatch", "--parsable", f"--reservation={session.reservation_name}",
         "--begin=now+600", "--time=1", "--output=/dev/null", "--wrap=true"],
        capture_output=True, text=True, check=True, cwd="/tmp",
    ).stdout.strip()  # fmt: skip
    LabSession.objects.filter(pk=session.pk).update(state=LabSessionState.CANCELLED)
    assert lab_reservations.remove(session.pk) == "removed"
    assert session.reservation_name not in slurm("scontrol", "show", "reservation")
    assert slurm("squeue", "-h", "-j", waiting, "-o", "%T %v").split() == ["PENDING", "(null)"]
    slurm("scancel", waiting)


def test_test_connection_says_the_service_account_may_make_reservations(lab_cluster):
    report = get_backend(lab_cluster).test_connection()
    assert "Lab sessions: labsvc is a SLURM operator and can make reservations." in report.lines


def test_the_beat_ends_a_session_past_its_end_and_removes_its_reservation(worker, course, lab_cluster):
    now = timezone.now()
    session = LabSession.objects.create(
        course=course, cluster=lab_cluster, starts_at=now, ends_at=now + timedelta(minutes=15), gpus=1
    )
    assert lab_reservations.make(session.pk) == "held"
    assert session.reservation_name in slurm("scontrol", "show", "reservation")
    LabSession.objects.filter(pk=session.pk).update(ends_at=timezone.now())  # its end, as the portal sees it
    wait_for(
        lambda: LabSession.objects.filter(pk=session.pk, state=LabSessionState.ENDED).exclude(removed_at=None).exists(),
        timeout=60,
        what="the beat to end the session and remove its reservation",
    )
    assert session.reservation_name not in slurm("scontrol", "show", "reservation")
    assert list(session.events.values_list("to_state", flat=True)) == ["held", "ended"]


def test_where_jobs_run_as_each_student_the_reservation_is_theirs_and_their_job_runs_in_it(
    worker, api_for, instructor, alice, bob, course, lab_cluster, whoami, students, job_state
):
    identity.with_identities(lab_cluster, RunAs.SUDO, alice, bob, students)
    session = LabSession.objects.create(
        course=course,
        cluster=lab_cluster,
        starts_at=timezone.now(),
        ends_at=timezone.now() + timedelta(minutes=15),
        gpus=1,
    )
    assert lab_reservations.make(session.pk) == "held"
    shown = slurm("scontrol", "show", "reservation", "--oneliner", session.reservation_name)
    assert f"Users={','.join(sorted(students))}" in shown  # the students' own users, not the service account
    job = job_state(identity.launch_whoami(api_for, alice), "pending", "running", "completed", timeout=120)
    assert job.account.username == students[0]
    assert f"Reservation={session.reservation_name}" in slurm("scontrol", "show", "job", "--oneliner", job.scheduler_id)
    assert f"owner={students[0]}" in read_whole_log(api_for, alice, job_state(job, "completed", timeout=150))


def waiting_job(owner, course, cluster, template) -> Job:
    """A job of the course that was already waiting when the session began: submitted for real as the service account,
    held back ten minutes by --begin so it stays pending through the test."""
    scheduler_id = subprocess.run(
        ["runuser", "-u", "labsvc", "--", "sbatch", "--parsable", "--begin=now+600", "--time=1",
         "--output=/dev/null", "--wrap=true"],
        capture_output=True, text=True, check=True, cwd="/tmp",
    ).stdout.strip()  # fmt: skip
    return Job.objects.create(
        owner=owner, course=course, cluster=cluster, template=template, state="pending", scheduler_id=scheduler_id
    )


def test_jobs_already_waiting_when_the_session_begins_are_moved_into_it_and_other_courses_jobs_are_not(
    worker, api_for, instructor, alice, make_user, course, other_course, lab_cluster, sleep_template
):
    other_course.clusters.add(lab_cluster)
    mine = waiting_job(alice, course, lab_cluster, sleep_template)
    theirs = waiting_job(make_user("olga"), other_course, lab_cluster, sleep_template)

    session = state_of(book_now(api_for, instructor, course, lab_cluster), LabSessionState.HELD)
    reservation_of = lambda job: slurm("squeue", "-h", "-j", job.scheduler_id, "-o", "%v").strip()  # noqa: E731
    # The beat's sweep finds the held session on now and the workers move the course's waiting job in.
    wait_for(lambda: reservation_of(mine) == session.reservation_name, timeout=60, what="the waiting job to move in")
    wait_for(
        lambda: LabSession.objects.filter(pk=session.pk).exclude(pending_moved_at=None).exists(),
        what="the session to record that its waiting jobs moved in",
    )
    assert reservation_of(theirs) == "(null)"  # another course's job waits for the cluster as before
    note = mine.events.get(kind="note")
    assert note.message == (
        "The class's lab session began: this job now waits for the GPUs held for the class "
        f"(reservation {session.reservation_name})."
    )
    assert not theirs.events.exists()
    # Once moved, the sweep leaves the session alone: the job's note is not written again.
    time.sleep(5)  # more than two sweeps (LAB_SESSION_SWEEP_SECONDS=2)
    assert mine.events.filter(kind="note").count() == 1
