"""`jobs` hands work to the workers by task name: the names it sends are the ones the workers register, and a sent
task reaches the worker's own code once the transaction commits. That `jobs` never imports the workers is the
import-linter contract `jobs-sends-tasks-by-name` (pyproject.toml)."""

import pytest

from courses import lab_sessions
from jobs import enqueue
from labs import live
from portal.celery import app


def test_the_tasks_jobs_sends_are_registered_by_the_workers_under_those_names():
    app.loader.import_default_modules()
    for name in (
        enqueue.SUBMIT_JOB,
        enqueue.CANCEL_JOB,
        lab_sessions.MAKE_RESERVATION,
        lab_sessions.REMOVE_RESERVATION,
    ):
        assert app.tasks[name].run.__module__ == "workers.tasks", name
    assert app.tasks[live.SEND_ROWS].run.__module__ == "workers.labs"  # the progress grid's rows


def test_the_beat_sweeps_lab_sessions_with_a_registered_task():
    app.loader.import_default_modules()
    entry = app.conf.beat_schedule["sweep-lab-sessions"]
    assert entry["task"] in app.tasks and entry["schedule"] > 0


@pytest.mark.django_db
def test_a_task_sent_by_name_runs_the_workers_task_once_the_transaction_commits(
    monkeypatch, django_capture_on_commit_callbacks
):
    from workers import tasks

    ran = []
    monkeypatch.setattr(tasks.cancellation, "cancel_on_cluster", lambda *args: ran.append(args))
    monkeypatch.setattr(app.conf, "task_always_eager", True)
    with django_capture_on_commit_callbacks(execute=True):
        enqueue.cancel("7e57", 3, "Cancel requested.")
        assert ran == []
    assert ran == [("7e57", 3, "Cancel requested.")]
