"""Cancel before submit, with a fake at the backend interface: the orderings a cancel request and a submit
can meet in, each ending `cancelled`, and never reaching the scheduler unless an sbatch already had.

The real race (a worker, SLURM, a failpoint holding the window open) is tests/integration/test_cancel_race.py.
"""

import pytest
from django.utils import timezone

from core.choices import JobState
from jobs import submission
from jobs.cancellation import request_cancel
from jobs.models import Job
from jobs.states import transition

pytestmark = pytest.mark.django_db


def _submitting(make_job, owner, attempts=0):
    job = make_job(owner)
    transition(job, JobState.SUBMITTING)
    Job.objects.filter(pk=job.pk).update(submit_attempts=attempts)
    return job


def test_cancel_recorded_before_the_submit_locks_never_reaches_the_scheduler(fake_backend, make_job, alice):
    job = _submitting(make_job, alice)
    request_cancel(alice, job)
    assert submission.submit(job.pk) is submission.Outcome.CANCELLED
    job.refresh_from_db()
    assert job.state == "cancelled" and job.scheduler_id == "" and not fake_backend.submitted
    assert job.events.filter(kind="cancel", actor=alice).exists()
    assert job.events.get(to_state="cancelled").message == submission.CANCELLED_BEFORE


def test_earlier_attempt_that_reached_the_scheduler_is_cancelled_there(fake_backend, make_job, alice):
    job = _submitting(make_job, alice, attempts=1)  # a worker died after its sbatch
    fake_backend.submitted["4242"] = job.pk
    request_cancel(alice, job)
    assert submission.submit(job.pk) is submission.Outcome.CANCELLED
    job.refresh_from_db()
    assert job.state == "cancelled" and job.scheduler_id == "4242" and fake_backend.cancelled == ["4242"]
    assert len(fake_backend.submitted) == 1


def test_cancel_recorded_during_the_sbatch_is_cancelled_on_the_scheduler(fake_backend, make_job, alice, monkeypatch):
    job = make_job(alice)

    def cancel_while_sbatch_runs(name):
        if name == "submit.after_sbatch":
            Job.objects.filter(pk=job.pk).update(cancel_requested_at=timezone.now())

    monkeypatch.setattr(submission.failpoints, "pause", cancel_while_sbatch_runs)
    assert submission.submit(job.pk) is submission.Outcome.CANCELLED
    job.refresh_from_db()
    assert job.state == "cancelled" and fake_backend.cancelled == [job.scheduler_id]
    assert "right after its submission" in job.events.get(to_state="cancelled").message


def test_a_locked_row_is_busy_not_given_up(fake_backend, make_job, alice, monkeypatch):
    job = _submitting(make_job, alice)
    monkeypatch.setattr(submission, "_claim_attempt", lambda job_id: False)  # as if another session held the row
    assert submission.submit(job.pk) is submission.Outcome.BUSY
    transition(Job.objects.get(pk=job.pk), JobState.CANCELLED)
    assert submission.submit(job.pk) is submission.Outcome.NOTHING


def test_waiting_on_a_lock_uses_no_retries(fake_backend, make_job, alice, monkeypatch):
    job = _submitting(make_job, alice)
    monkeypatch.setattr(submission, "_claim_attempt", lambda job_id: False)
    for _ in range(5):
        submission.submit(job.pk)
    assert Job.objects.get(pk=job.pk).submit_attempts == 0


def test_a_starting_worker_resubmits_the_queued_and_submitting_jobs(fake_backend, make_job, alice):
    queued, submitting, done = make_job(alice), _submitting(make_job, alice), make_job(alice)
    submission.submit(done.pk)
    assert set(submission.waiting_for_submission()) == {queued.pk, submitting.pk}
