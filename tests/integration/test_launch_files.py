"""A launch that names a file in the student's Files space (the Tiny LM's Training text) is checked at launch on the
local SLURM's login node, over SFTP as the user the student's jobs run as, rather than failing after the queue."""

from __future__ import annotations

import os

import pytest

from jobs import enqueue
from jobs.builtin import load_builtin_templates
from jobs.models import Job

from .test_files import as_job_user, lab, space_of  # noqa: F401  (the lab fixture)


@pytest.fixture
def tinylm(course, cluster, monkeypatch):
    monkeypatch.setattr(enqueue, "submit", lambda job_id: None)  # a launch accepted here is never submitted
    load_builtin_templates([course])


def _launch(api_for, user, data: str):
    body = {"template": "tiny-lm-single", "cluster": "local", "params": {"data": data}}
    return api_for(user).post("/api/v1/jobs/", body, format="json")


def test_a_training_text_missing_from_the_students_files_is_refused_at_launch_with_what_to_do(
    lab,  # noqa: F811
    tinylm,
    alice,
    bob,
    api_for,
    services,
):
    answer = _launch(api_for, alice, "data/notes.txt")
    assert answer.status_code == 400, answer.content
    said = answer.json()["params"]["data"][0]
    assert "There is no file “data/notes.txt” in your Files on" in said and "Upload it on the Files page" in said
    assert not Job.objects.exists()

    space = space_of(lab, alice)
    (space / "data").mkdir(parents=True)
    (space / "data" / "notes.txt").write_text("some training text\n" * 100)
    (space / "data" / "secret.txt").write_text("root's\n")
    as_job_user(lab, services)
    os.chown(space / "data" / "secret.txt", 0, 0)
    (space / "data" / "secret.txt").chmod(0o600)  # there, but not readable by the job's user
    assert _launch(api_for, alice, "data/notes.txt").status_code == 201
    said = _launch(api_for, alice, "data/secret.txt").json()["params"]["data"][0]
    assert "cannot be read by" in said and "the user your jobs run as" in said
    said = _launch(api_for, alice, "data").json()["params"]["data"][0]
    assert "is a folder: give the path of a file in it." in said
    # Bob's Files are his own: alice's file is not in them.
    assert _launch(api_for, bob, "data/notes.txt").status_code == 400
    assert _launch(api_for, bob, "").status_code == 201  # empty: the bundled text, nothing to check
