"""Jobs launched through the real pages and API, submitted by a real worker over real SSH to real SLURM."""

import base64
import pwd
import subprocess
from pathlib import Path

import paramiko
import pytest
from django.urls import reverse

from clusters.backends.kinds.slurm.backend import SlurmBackend
from clusters.kinds import get_backend
from clusters.models import Cluster
from jobs.models import Job
from tests.integration.jobs_api import launch, read_whole_log
from tests.kind_settings import set_cluster

from .conftest import LAB_DIR, slurm, wait_for, wait_for_polls


def test_launch_from_the_form_runs_pending_running_completed(
    worker, login, alice, cluster, sleep_template, course, job_state, api_for
):
    url = reverse("jobs:launch", args=[course.slug, sleep_template.slug])
    data = {
        "cluster": cluster.pk,
        "param_partition": "debug",
        "param_time_minutes": 2,
        "param_gpus_per_node": 1,
        "param_seconds": 4,
        "param_exit_code": 0,
        "param_message": "hello-from-the-lab",
    }
    assert login(alice).post(url, data).status_code == 302
    job = job_state(Job.objects.get(), "completed")
    moves = list(job.events.filter(kind="state").values_list("to_state", flat=True))
    assert moves == ["submitting", "pending", "running", "completed"]
    assert job.exit_code == 0 and job.started_at and job.finished_at and job.scheduler_id.isdigit()
    assert slurm("squeue", "--states=all", "--noheader", f"--jobs={job.scheduler_id}", "--format=%k").strip() == (
        f"gpulab:{job.pk}"
    )
    log = read_whole_log(api_for, alice, job)
    assert "hello-from-the-lab" in log and "done" in log


def test_failed_job_reports_its_exit_code(worker, api_for, alice, cluster, sleep_template, job_state):
    job = job_state(launch(api_for, alice, seconds=0, exit_code=3), "failed")
    assert job.exit_code == 3 and "exit code 3" in job.error


@pytest.mark.parametrize("followed_with", ["scontrol", "sacct"])
def test_cancel_a_running_job(worker, api_for, alice, cluster, sleep_template, job_state, followed_with):
    set_cluster(cluster, has_accounting=followed_with == "sacct", save=True)
    job = job_state(launch(api_for, alice, seconds=300), "running")
    # SLURM's "running" comes before slurmd has started the script; a cancel in between can leave the shell alive
    # (this node's proctrack/linuxproc finds processes by walking /proc), and it then exits 0 after its sleep is killed.
    wait_for(lambda: "sleep" in _commands_of(job.scheduler_id), timeout=60, what="the script to reach its sleep")
    response = api_for(alice).post(f"/api/v1/jobs/{job.pk}/cancel/")
    assert response.status_code == 202
    job = job_state(job, "cancelled", timeout=60)
    state = slurm("squeue", "--states=all", "--noheader", f"--jobs={job.scheduler_id}", "--format=%T").strip()
    assert state in {"CANCELLED", "COMPLETING"}
    assert job.events.filter(kind="cancel", actor=alice).exists()
    assert job.exit_code == 143  # SLURM's 0:15 (SIGTERM), the same with accounting and without


def _commands_of(scheduler_id: str) -> set[str]:
    """The command names of the job's processes on the node (`scontrol listpids` runs where the job does)."""
    listed = slurm("scontrol", "listpids", scheduler_id).splitlines()[1:]
    names = set()
    for pid in (line.split()[0] for line in listed if line.split()):
        try:
            names.add(Path(f"/proc/{pid}/comm").read_text().strip())
        except OSError:  # it ended between the listing and the read
            continue
    return names


@pytest.mark.timeout(400)
def test_time_limit_gives_timed_out(worker, api_for, alice, cluster, sleep_template, job_state):
    job = job_state(launch(api_for, alice, seconds=600, time_minutes=1), "timed_out", timeout=240)
    assert "time limit of 1 minutes" in job.error


def test_sbatch_rejection_is_submit_failed_with_the_schedulers_words(
    worker, api_for, alice, cluster, sleep_template, job_state
):
    Cluster.objects.filter(pk=cluster.pk).update(partitions=["debug", "gpu", "nosuch"])
    job = job_state(launch(api_for, alice, partition="nosuch"), "submit_failed")
    assert "sbatch refused the job" in job.error and "invalid partition" in job.error.lower()
    assert not job.scheduler_id
    assert slurm("squeue", "--states=all", "--noheader", "--format=%k").count(str(job.pk)) == 0


def test_unreachable_host_is_submit_failed(worker, api_for, alice, cluster, sleep_template, job_state):
    Cluster.objects.filter(pk=cluster.pk).update(port=1)
    job = job_state(launch(api_for, alice), "submit_failed", timeout=60)
    assert "Cannot reach" in job.error
    assert job.events.filter(kind="note", message__contains="Trying again").exists()


def test_wrong_key_is_submit_failed(worker, api_for, alice, cluster, sleep_template, job_state):
    account = cluster.service_account()
    account.set_secret(_private_key_text(paramiko.RSAKey.generate(2048)))  # a key the cluster never saw
    account.save()
    job = job_state(launch(api_for, alice), "submit_failed")
    assert "refused the login" in job.error


def test_host_key_mismatch_refuses_to_connect(worker, api_for, alice, cluster, sleep_template, job_state):
    other = paramiko.RSAKey.generate(2048)
    Cluster.objects.filter(pk=cluster.pk).update(host_key=f"ssh-rsa {other.get_base64()}")
    job = job_state(launch(api_for, alice), "submit_failed")
    assert "Refusing to connect" in job.error and "pinned" in job.error


def test_hostile_values_are_refused_and_safe_ones_reach_slurm_unchanged(
    worker, api_for, alice, cluster, sleep_template, job_state
):
    hostile = "$(touch /tmp/gpulab-pwned) `touch pwned2` ; touch pwned3 --wrap=touch pwned4 ../../etc 'q' \"dq\""
    response = api_for(alice).post(
        "/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local", "params": {"message": hostile}}, format="json"
    )
    assert response.status_code == 400 and "Use only letters, digits" in response.json()["params"]["message"][0]
    edge = "a=b,c:/d@e%f+g.h_-9"  # every character the safe set allows
    job = job_state(launch(api_for, alice, message=edge, seconds=0), "completed")
    assert edge in read_whole_log(api_for, alice, job)
    assert not Path("/tmp/gpulab-pwned").exists()
    # The job ran as the shared user (never the service account), sbatch reading the script on its standard input.
    home = Path(pwd.getpwnam(cluster.shared_user).pw_dir)
    run_dir = home / cluster.lab_dir.removeprefix("~/") / "jobs" / str(job.pk)
    assert sorted(p.name for p in run_dir.iterdir()) == ["output.log"]
    script = Job.objects.get(pk=job.pk).script
    assert f"export GPULAB_P_message={edge}" in script  # the value also travels as an environment variable
    assert not any(p.name.startswith("pwned") for p in [*home.iterdir(), *run_dir.iterdir()])
    assert slurm("squeue", "--states=all", "--noheader", "--format=%k").count(f"gpulab:{job.pk}") == 1


def test_students_own_account_runs_jobs_as_them(
    worker, api_for, login, alice, cluster, sleep_template, job_state, services
):
    login(alice).post(
        reverse("profile"),
        {
            "cluster": cluster.pk,
            "username": services["GPULAB_PERSONAL_USER"],
            "auth_method": "password",
            "secret": services["GPULAB_PERSONAL_PASSWORD"],
        },
    )
    job = job_state(launch(api_for, alice, seconds=0), "completed")
    user = slurm("squeue", "--states=all", "--noheader", f"--jobs={job.scheduler_id}", "--format=%u").strip()
    assert user == services["GPULAB_PERSONAL_USER"]
    assert "done" in read_whole_log(api_for, alice, job)


@pytest.mark.timeout(300)
def test_worker_killed_during_submission_submits_exactly_once(
    worker, api_for, alice, cluster, sleep_template, job_state
):
    worker.stop()
    worker.start(FAILPOINTS="submit.after_sbatch=60")  # hold the worker between sbatch and recording the id
    job = launch(api_for, alice, seconds=1)
    comment = f"gpulab:{job.pk}"
    wait_for(
        lambda: comment in slurm("squeue", "--states=all", "--noheader", "--format=%k"),
        timeout=60,
        what="sbatch to have run",
    )
    assert Job.objects.get(pk=job.pk).state == "submitting"
    worker.kill()
    worker.start()  # the stale-submission sweep finds the job and the retry finds the earlier sbatch
    job = job_state(job, "completed", timeout=120)
    assert slurm("squeue", "--states=all", "--noheader", "--format=%k").split().count(comment) == 1
    assert "Found the earlier submission" in job.events.get(to_state="pending").message


def stop_slurmctld() -> None:
    """Stop the controller as a crash would (its pid from the running config), and wait until it no longer answers;
    the caller starts it again with `slurmctld`."""
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, check=True).stdout
    pidfile = Path(config.split("SlurmctldPidFile")[1].split("=")[1].split()[0])
    subprocess.run(["kill", pidfile.read_text().strip()], check=True)
    wait_for(
        lambda: subprocess.run(["scontrol", "ping"], capture_output=True, text=True).stdout.count("DOWN"),
        timeout=30,
        what="slurmctld to stop",
    )


@pytest.mark.slurm_outage  # it stops slurmctld
@pytest.mark.timeout(300)
def test_slurmctld_outage_keeps_last_state_and_recovers(worker, api_for, alice, cluster, sleep_template, job_state):
    job = job_state(launch(api_for, alice, seconds=10), "running")
    stop_slurmctld()
    try:
        # The job ends meanwhile, and no process on the node says so while slurmctld is away (its steps wait to report).
        log = Path(pwd.getpwnam(cluster.shared_user).pw_dir) / LAB_DIR[2:] / "jobs" / str(job.pk) / "output.log"
        wait_for(lambda: "done" in log.read_text(), timeout=30, what="the job's script to end on the node")
        # Polls against the stopped controller wait out their timeouts: the second one began after the job ended.
        wait_for_polls(cluster.name, cycles=2)
        job.refresh_from_db()
        assert job.state == "running"
        assert not job.events.filter(to_state__in=["failed", "lost", "submit_failed"]).exists()
    finally:
        subprocess.run(["slurmctld"], check=True)
    job = job_state(job, "completed", timeout=120)
    assert job.exit_code == 0


@pytest.mark.slurm_outage  # it stops slurmctld
@pytest.mark.timeout(300)
def test_with_accounting_a_slurmctld_outage_still_shows_the_stale_notice(
    worker, api_for, alice, cluster, sleep_template, job_state
):
    """sacct reads slurmdbd, which answers while slurmctld is down (the job still "RUNNING" there): such a poll must
    not count as hearing from the cluster, so the pages say states may be out of date until the controller is back."""
    from core import measurements
    from jobs.staleness import notices_for

    set_cluster(cluster, has_accounting=True, save=True)
    job = job_state(launch(api_for, alice, seconds=20), "running")
    stop_slurmctld()
    try:
        wait_for(
            lambda: notices_for(Job.objects.select_related("cluster").get(pk=job.pk)),
            timeout=45,
            what="the stale notice while only slurmdbd answers",
        )
        # The poll's squeue waits out its own timeouts against the stopped controller before the note is written.
        wait_for(
            lambda: "slurmctld did not answer" in measurements.polls()[cluster.name]["note"],
            timeout=90,
            what="a poll that heard only from accounting",
        )
        assert notices_for(Job.objects.select_related("cluster").get(pk=job.pk))
        assert Job.objects.get(pk=job.pk).state == "running"
    finally:
        subprocess.run(["slurmctld"], check=True)
    job_state(job, "completed", timeout=120)
    job_state(launch(api_for, alice, seconds=20), "running")  # a job to poll for, now the controller answers
    wait_for(lambda: not measurements.polls()[cluster.name]["note"], timeout=60, what="the controller heard again")


def test_stage_lab_files_and_test_connection_from_the_admin(worker, client, admin_user, cluster, services, settings):
    client.force_login(admin_user)
    Cluster.objects.filter(pk=cluster.pk).update(host_key="")
    page = client.get(reverse("admin:cluster_test", args=[cluster.pk])).content.decode()
    offered = services["GPULAB_HOST_KEY"]
    fingerprint = "SHA256:" + base64.b64encode(
        __import__("hashlib").sha256(base64.b64decode(offered.split()[1])).digest()
    ).decode().rstrip("=")
    assert fingerprint in page and "Pin this key" in page
    page = client.post(reverse("admin:cluster_test", args=[cluster.pk]), {"host_key": offered}).content.decode()
    cluster.refresh_from_db()
    assert cluster.host_key == offered and "Login works" in page and "22.05" in page
    assert cluster.credential_events.filter(action="host_key_pinned", actor=admin_user).exists()

    client.post(reverse("admin:cluster_stage", args=[cluster.pk]))
    backend: SlurmBackend = get_backend(cluster)
    from clusters.backends import ssh

    with ssh.sftp(cluster, cluster.service_account()) as sftp:
        assert "mpi_hello.c" in sftp.listdir(backend.lab_path("mpi"))


def _private_key_text(key: paramiko.PKey) -> str:
    import io

    buffer = io.StringIO()
    key.write_private_key(buffer)
    return buffer.getvalue()
