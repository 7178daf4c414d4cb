"""A long log is kept by its END (where a failing job says why), from a whole line, with a first line saying the
beginning was cut: real SLURM over sshd, as the service account and as the student's own user through sudo."""

import pwd
import shutil
from pathlib import Path

import pytest

from clusters.choices import RunAs
from clusters.identity import set_cluster_username
from jobs.kept_logs import keep
from jobs.models import Job, JobTemplate, KeptLog
from tests.integration.conftest import wait_for
from tests.integration.jobs_api import read_whole_log

LAB_DIR = "~/gpulab-kept-end-test"
LONG_LOG = """\
seq 1 5000 | sed 's/^/step /'
echo "RuntimeError: CUDA out of memory (the-error-at-the-end)"
exit 1
"""


@pytest.fixture
def long_log(transactional_db, course):
    template = JobTemplate.objects.create(
        name="Long log",
        slug="long-log",
        body=LONG_LOG,
        parameters=[{"name": "partition", "type": "choice", "label": "Partition", "default": "debug"}],
        status=JobTemplate.Status.PUBLISHED,
        max_minutes=5,
    )
    template.courses.add(course)
    return template


@pytest.mark.parametrize("mode", [RunAs.SERVICE, RunAs.SUDO])
def test_a_long_log_is_kept_by_its_end_and_the_page_says_the_beginning_was_cut(
    mode, worker, api_for, alice, cluster, long_log, job_state, services, settings
):
    cluster.lab_dir, cluster.run_as = LAB_DIR, mode
    cluster.save()
    owner = cluster.shared_user  # the shared mode: the one unprivileged user, never the service account
    if mode == RunAs.SUDO:
        owner = "labalice"
        set_cluster_username(alice, owner)
    lab = Path(pwd.getpwnam(owner).pw_dir) / LAB_DIR[2:]
    try:
        response = api_for(alice).post(
            "/api/v1/jobs/", {"template": "long-log", "cluster": "local", "params": {}}, format="json"
        )
        assert response.status_code == 201, response.content
        job = job_state(Job.objects.get(pk=response.json()["id"]), "failed")
        wait_for(lambda: KeptLog.objects.filter(job=job).exists(), timeout=60, what="the worker's kept log")
        settings.GPULAB_KEPT_LOG_BYTES = 4096  # the log is ~44 KiB; kept again here with this cap
        kept = keep(job)
        assert kept.truncated and kept.data.endswith("(the-error-at-the-end)\n")
        assert kept.data.startswith("step ") and len(kept.data.encode()) <= 4096  # from a whole line
        assert "step 1\n" not in kept.data

        shutil.rmtree(lab / "jobs" / str(job.pk))  # the cluster's scratch is cleaned: the page reads the kept end
        shown = read_whole_log(api_for, alice, job)
        assert shown.startswith("[The portal kept the last 4 KiB of this log; its beginning was cut.]\n")
        assert shown.endswith("(the-error-at-the-end)\n")
    finally:
        shutil.rmtree(lab, ignore_errors=True)
