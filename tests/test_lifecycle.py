"""State machine, submission, polling and cancelling, with a fake at the backend interface."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from clusters.backends.base import SchedulerStatus
from core.choices import JobState
from jobs import enqueue, polling, submission
from jobs.cancellation import cancel_on_cluster, request_cancel
from jobs.models import Job
from jobs.states import can_move, transition

pytestmark = pytest.mark.django_db


def test_transition_is_conditional_and_audited(make_job, alice):
    job = make_job(alice)
    stale_copy = Job.objects.get(pk=job.pk)
    assert transition(job, JobState.SUBMITTING, message="go")
    assert not transition(stale_copy, JobState.SUBMITTING)  # a duplicate sees the row already moved
    event = job.events.get(kind="state")
    assert (event.from_state, event.to_state, event.message) == ("queued", "submitting", "go")


def test_illegal_moves_do_nothing(make_job, alice):
    job = make_job(alice)
    assert not can_move("completed", "running")
    assert not transition(job, JobState.COMPLETED)  # queued jobs never complete without being submitted
    job.refresh_from_db()
    assert job.state == "queued" and not job.events.filter(kind="state").exists()


def test_submit_records_scheduler_id_and_duplicate_delivery_changes_nothing(fake_backend, make_job, alice):
    job = make_job(alice)
    assert submission.submit(job.pk) is submission.Outcome.SUBMITTED
    assert submission.submit(job.pk) is submission.Outcome.NOTHING
    job.refresh_from_db()
    assert job.state == "pending" and job.scheduler_id in fake_backend.submitted
    assert len(fake_backend.submitted) == 1 and job.submitted_at is not None


def test_retried_submit_finds_the_earlier_submission(fake_backend, make_job, alice):
    job = make_job(alice)
    transition(job, JobState.SUBMITTING)
    Job.objects.filter(pk=job.pk).update(submit_attempts=1)  # a worker died after sbatch
    fake_backend.submitted["4242"] = job.pk
    assert submission.submit(job.pk) is submission.Outcome.SUBMITTED
    job.refresh_from_db()
    assert job.scheduler_id == "4242" and len(fake_backend.submitted) == 1
    assert "Found the earlier submission" in job.events.last().message


def test_unreachable_cluster_retries_then_fails_with_its_message(fake_backend, make_job, alice, settings):
    settings.GPULAB_SUBMIT_RETRIES = 1
    fake_backend.down = True
    job = make_job(alice)
    assert submission.submit(job.pk) is submission.Outcome.RETRY
    assert submission.submit(job.pk) is submission.Outcome.FAILED
    job.refresh_from_db()
    assert job.state == "submit_failed" and "fake cluster is down" in job.error and not fake_backend.submitted


def test_submit_refuses_when_student_left_the_course(fake_backend, make_job, alice):
    job = make_job(alice)
    alice.enrollments.all().delete()
    assert submission.submit(job.pk) is submission.Outcome.FAILED
    job.refresh_from_db()
    assert job.state == "submit_failed" and "not enrolled" in job.error and not fake_backend.submitted


def _submitted(make_job, owner, fake):
    job = make_job(owner)
    submission.submit(job.pk)
    job.refresh_from_db()
    return job


def test_one_poll_call_per_cluster_for_all_jobs(fake_backend, make_job, alice, bob, cluster):
    jobs = [_submitted(make_job, owner, fake_backend) for owner in (alice, alice, bob)]
    for job in jobs:
        fake_backend.statuses[job.scheduler_id] = SchedulerStatus(job.scheduler_id, JobState.RUNNING, "RUNNING")
    report = polling.poll_cluster(cluster.pk)
    assert len(fake_backend.poll_calls) == 1 and sorted(fake_backend.poll_calls[0]) == sorted(
        j.scheduler_id for j in jobs
    )
    assert report.moved == 3
    assert set(Job.objects.values_list("state", flat=True)) == {"running"}


def test_poll_applies_exit_codes_and_messages(fake_backend, make_job, alice, cluster):
    job = _submitted(make_job, alice, fake_backend)
    fake_backend.statuses[job.scheduler_id] = SchedulerStatus(job.scheduler_id, JobState.FAILED, "FAILED", exit_code=3)
    polling.poll_cluster(cluster.pk)
    job.refresh_from_db()
    assert job.state == "failed" and job.exit_code == 3 and "exit code 3" in job.error and job.finished_at


def test_job_cancelled_while_pending_has_no_exit_code_nor_start(fake_backend, make_job, alice, cluster):
    pending, running = _submitted(make_job, alice, fake_backend), _submitted(make_job, alice, fake_backend)
    at = timezone.now()
    Job.objects.filter(pk=running.pk).update(state=JobState.RUNNING, started_at=at - timedelta(minutes=2))
    for job in (pending, running):  # SLURM's pair for a cancel: 0:0, and a pending job's start set to its end
        fake_backend.statuses[job.scheduler_id] = SchedulerStatus(
            job.scheduler_id, JobState.CANCELLED, "CANCELLED", exit_code=0, started_at=at, finished_at=at
        )
    polling.poll_cluster(cluster.pk)
    pending.refresh_from_db()
    running.refresh_from_db()
    assert (pending.state, pending.exit_code, pending.started_at) == ("cancelled", None, None)
    assert (running.state, running.exit_code) == ("cancelled", 0)  # it ran: what SLURM reported stays


def test_cluster_outage_changes_no_job(fake_backend, make_job, alice, cluster):
    job = _submitted(make_job, alice, fake_backend)
    fake_backend.down = True
    report = polling.poll_cluster(cluster.pk)
    job.refresh_from_db()
    assert report.error and job.state == "pending" and job.events.filter(to_state="failed").count() == 0


def test_job_missing_from_scheduler_is_lost_only_after_grace(fake_backend, make_job, alice, cluster, settings):
    settings.GPULAB_LOST_AFTER = 600
    job = _submitted(make_job, alice, fake_backend)
    polling.poll_cluster(cluster.pk)
    job.refresh_from_db()
    assert job.state == "pending"
    Job.objects.filter(pk=job.pk).update(submitted_at=timezone.now() - timedelta(hours=1))
    polling.poll_cluster(cluster.pk)
    job.refresh_from_db()
    assert job.state == "lost" and "no longer knows this job" in job.error


def test_cancel_queued_job_is_immediate(make_job, alice):
    job = make_job(alice)
    request_cancel(alice, job)
    job.refresh_from_db()
    assert job.state == "cancelled" and job.events.get(to_state="cancelled").actor == alice


def test_cancel_submitted_job_goes_through_the_scheduler(fake_backend, make_job, alice, cluster):
    job = _submitted(make_job, alice, fake_backend)
    request_cancel(alice, job)
    fake_backend.statuses[job.scheduler_id] = SchedulerStatus(job.scheduler_id, JobState.CANCELLED, "CANCELLED")
    cancel_on_cluster(job.pk)
    job.refresh_from_db()
    assert fake_backend.cancelled == [job.scheduler_id] and job.state == "cancelled"
    assert job.events.filter(kind="cancel", actor=alice).exists()


def test_stale_submissions_are_found(make_job, alice, settings):
    settings.GPULAB_SUBMIT_STALE_AFTER = 60
    job = make_job(alice)
    assert submission.stale_submissions() == []
    Job.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=5))
    assert [j.pk for j in submission.stale_submissions()] == [job.pk]


def test_the_stale_sweep_sends_a_silent_submission_again_and_fails_one_out_of_attempts(
    make_job, alice, settings, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr("core.enqueue.send", lambda name, args: sent.append((name, args)))
    settings.GPULAB_SUBMIT_STALE_AFTER, settings.GPULAB_SUBMIT_RETRIES = 60, 2
    silent, crashing = make_job(alice), make_job(alice)
    Job.objects.filter(pk=crashing.pk).update(state=JobState.SUBMITTING, submit_attempts=4)
    Job.objects.update(updated_at=timezone.now() - timedelta(minutes=5))
    with django_capture_on_commit_callbacks(execute=True):
        submission.sweep_stale()
    assert sent == [(enqueue.SUBMIT_JOB, (str(silent.pk),))]
    crashing.refresh_from_db()
    assert crashing.state == JobState.SUBMIT_FAILED and "Try launching it again" in crashing.error


def test_a_worker_that_starts_sends_every_waiting_submission_again(
    make_job, alice, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr("core.enqueue.send", lambda name, args: sent.append((name, args)))
    first, second = make_job(alice), make_job(alice)
    Job.objects.filter(pk=second.pk).update(state=JobState.SUBMITTING)
    with django_capture_on_commit_callbacks(execute=True):
        assert submission.resume_waiting() == 2
    assert sent == [(enqueue.SUBMIT_JOB, (str(first.pk),)), (enqueue.SUBMIT_JOB, (str(second.pk),))]


def test_submit_of_missing_job_is_quiet():
    assert submission.submit(uuid.uuid4()) is submission.Outcome.NOTHING


def test_log_endpoint_reads_from_offset(fake_backend, make_job, alice, api_for):
    job = _submitted(make_job, alice, fake_backend)
    fake_backend.logs[job.pk] = "line one\nline two\n"
    client = api_for(alice)
    first = client.get(f"/api/v1/jobs/{job.pk}/log/?offset=0").json()
    assert first == {"offset": 18, "data": "line one\nline two\n", "eof": True, "done": False}
    assert client.get(f"/api/v1/jobs/{job.pk}/log/?offset=9").json()["data"] == "line two\n"
    assert client.get(f"/api/v1/jobs/{job.pk}/log/?offset=-1").status_code == 400


def test_a_scheduler_start_time_before_the_submission_is_raised_to_it(fake_backend, make_job, alice, cluster):
    job = _submitted(make_job, alice, fake_backend)
    job.refresh_from_db()
    early = job.submitted_at - timedelta(
        seconds=40
    )  # the cluster's clock, or a job that started before sbatch returned
    fake_backend.statuses[job.scheduler_id] = SchedulerStatus(
        job.scheduler_id, JobState.RUNNING, "RUNNING", started_at=early
    )
    polling.poll_cluster(cluster.pk)
    job.refresh_from_db()
    assert job.state == "running" and job.started_at == job.submitted_at


def test_an_end_before_the_start_is_raised_to_it(fake_backend, make_job, alice, cluster):
    job = _submitted(make_job, alice, fake_backend)
    job.refresh_from_db()
    start = job.submitted_at + timedelta(seconds=5)
    fake_backend.statuses[job.scheduler_id] = SchedulerStatus(
        job.scheduler_id,
        JobState.COMPLETED,
        "COMPLETED",
        exit_code=0,
        started_at=start,
        finished_at=start - timedelta(seconds=3),
    )
    polling.poll_cluster(cluster.pk)
    job.refresh_from_db()
    assert job.state == "completed" and job.submitted_at < job.started_at == job.finished_at


def test_a_direct_move_from_submitting_to_running_keeps_start_after_submission(make_job, alice):
    job = make_job(alice)
    assert transition(job, JobState.SUBMITTING)
    assert transition(job, JobState.RUNNING, scheduler_id="77", started_at=timezone.now() - timedelta(minutes=5))
    job.refresh_from_db()
    assert job.submitted_at and job.started_at >= job.submitted_at


def test_a_log_offset_past_the_end_answers_the_size_and_no_data(fake_backend, make_job, alice, api_for):
    job = _submitted(make_job, alice, fake_backend)
    fake_backend.logs[job.pk] = "line one\nline two\n"
    client = api_for(alice)
    for offset in ["19", "9223372036854775808", "1" + "0" * 90]:
        body = client.get(f"/api/v1/jobs/{job.pk}/log/?offset={offset}").json()
        assert body == {"offset": 18, "data": "", "eof": True, "done": False}, offset
    for offset in ["٢", " 2", "1_0", "-1", ""]:
        response = client.get(f"/api/v1/jobs/{job.pk}/log/?offset={offset}")
        assert response.status_code == 400 and "digits 0-9" in response.json()["offset"][0], offset


def test_a_transient_submit_failure_waits_longer_with_each_attempt(make_job, alice, settings):
    settings.GPULAB_SUBMIT_RETRY_DELAY = 2
    job = make_job(alice)
    delays = []
    for attempts in (1, 2, 3):
        Job.objects.filter(pk=job.pk).update(submit_attempts=attempts)
        delays.append(submission.next_retry_delay(job.pk))
    assert delays == [2, 4, 8]
    assert submission.next_retry_delay(uuid.uuid4()) == 2  # a row gone meanwhile: the first delay
