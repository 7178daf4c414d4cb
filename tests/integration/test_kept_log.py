"""A finished job's log is copied into the portal when the job ends, and its page and API still show it after the
cluster's scratch (the run directory) is cleaned: real worker, real SLURM over sshd."""

import pwd
import shutil
from pathlib import Path

from jobs.models import KeptLog
from tests.integration.conftest import WORKER_SUFFIX, wait_for
from tests.integration.jobs_api import launch, read_whole_log

LAB_DIR = "~/gpulab-kept-log-test" + WORKER_SUFFIX


def test_the_log_of_a_finished_job_is_still_shown_after_its_run_directory_is_removed(
    worker, api_for, alice, cluster, sleep_template, job_state, services
):
    cluster.lab_dir = LAB_DIR
    cluster.save()
    lab = Path(pwd.getpwnam(cluster.shared_user).pw_dir) / LAB_DIR[2:]  # jobs run as the shared user
    try:
        job = job_state(launch(api_for, alice, seconds=0, message="kept-by-the-portal"), "completed")
        kept = wait_for(lambda: KeptLog.objects.filter(job=job).first(), timeout=60, what="the kept log")
        assert "kept-by-the-portal" in kept.data and not kept.truncated

        shutil.rmtree(lab / "jobs" / str(job.pk))  # the cluster's scratch is cleaned
        assert "kept-by-the-portal" in read_whole_log(api_for, alice, job)
        assert api_for(alice).get(f"/api/v1/jobs/{job.pk}/log/").json()["done"] is True
    finally:
        shutil.rmtree(lab, ignore_errors=True)
