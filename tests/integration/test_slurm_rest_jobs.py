"""The slurm-rest kind against the real slurmrestd (JWT) beside the local slurmctld, through a real worker.

The same cases as test_slurm_jobs.py for the SSH kind: launch → running → completed, failed with its exit code,
cancel, time limit, an unknown partition, an unreachable server and a lapsed token (neither fails a job), a retried
submit that finds the first, and a student's own cluster user through X-SLURM-USER-NAME.

The service account is its own cluster user (GPULAB_SLURMREST_USER) with no SSH login, as a REST-only site would
have it, holding the SlurmUser's token; students' jobs run as the cluster's shared user (GPULAB_SHARED_USER), never
as the service account: their output is read here from the file SLURM wrote in the shared user's home, and the job
page says logs are unavailable.
"""

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path

import pytest
from django.urls import reverse

from clusters.backends import ssh
from clusters.kinds import get_backend
from clusters.models import AuthMethod, Cluster, ClusterAccount
from core import measurements
from jobs.models import Job
from tests.integration.jobs_api import launch, read_whole_log

from .conftest import cancel_own_jobs, slurm, wait_for, wait_for_polls, wait_for_the_node_to_end


@pytest.fixture
def rest_env(services):
    if not services.get("GPULAB_SLURMREST_URL"):
        pytest.fail("slurmrestd is not described in cluster.env; run `scripts/local_slurm.sh start`")
    return services


@pytest.fixture
def rest_cluster(transactional_db, course, rest_env):
    """The local SLURM through slurmrestd with the SlurmUser's token; SSH on the login node for students' own users."""
    cluster = Cluster.objects.create(
        name="local",
        title="Local SLURM (REST)",
        kind="slurm-rest",
        api_url=rest_env["GPULAB_SLURMREST_URL"],
        host=rest_env["GPULAB_SSH_HOST"],
        port=int(rest_env["GPULAB_SSH_PORT"]),
        host_key=rest_env["GPULAB_HOST_KEY"],
        partitions=["debug", "gpu"],
        gpu_types=["demo"],
        lab_dir="~/gpulab-rest-test",
        run_as="service",
        shared_user=shared_user(rest_env),
    )
    account = ClusterAccount(cluster=cluster, username=rest_env["GPULAB_SLURMREST_USER"], auth_method=AuthMethod.KEY)
    token = slurm_token(rest_env)
    from clusters.backends import tokens

    account.set_api_token(token, tokens.expires_at(token))
    account.save()
    course.clusters.add(cluster)
    yield cluster
    cancel_own_jobs()  # this test's jobs only: other tests and a demo run jobs as the same shared user
    for job in Job.objects.filter(cluster=cluster):
        Path(f"/home/{cluster.shared_user}/gpulab-{job.pk}.log").unlink(missing_ok=True)


def shared_user(env) -> str:
    return env.get("GPULAB_SHARED_USER", "labshared")


def output_of(env, job: Job) -> str:
    """What the job printed, from the file SLURM wrote in the shared user's home (the portal has no SSH login)."""
    path = Path(f"/home/{shared_user(env)}/gpulab-{job.pk}.log")
    text = path.read_text()
    path.unlink()
    return text


def slurm_token(env) -> str:
    return Path(env["GPULAB_SLURMREST_TOKEN_FILE"]).read_text().strip()


def expired_token(env) -> str:
    """A token slurmctld itself would accept but for its `exp`: signed with the cluster's own JWT key."""

    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    now = int(time.time())
    claims = {"exp": now - 60, "iat": now - 3600, "sun": "root"}
    signing_input = f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}"
    key = Path(env["GPULAB_SLURMREST_JWT_KEY"]).read_bytes()
    signature = base64.urlsafe_b64encode(hmac.new(key, signing_input.encode(), hashlib.sha256).digest()).rstrip(b"=")
    return f"{signing_input}.{signature.decode()}"


def squeue(job: Job, fmt: str) -> str:
    return slurm("squeue", "--states=all", "--noheader", f"--jobs={job.scheduler_id}", f"--format={fmt}").strip()


def test_launch_from_the_form_runs_pending_running_completed_through_slurmrestd(
    worker, login, alice, rest_cluster, sleep_template, course, job_state, rest_env, api_for
):
    url = reverse("jobs:launch", args=[course.slug, sleep_template.slug])
    data = {
        "cluster": rest_cluster.pk,
        "param_partition": "gpu",
        "param_time_minutes": 3,
        "param_gpus_per_node": 2,
        "param_seconds": 4,
        "param_exit_code": 0,
        "param_message": "hello-over-rest",
    }
    assert login(alice).post(url, data).status_code == 302
    job = job_state(Job.objects.get(), "completed")
    moves = list(job.events.filter(kind="state").values_list("to_state", flat=True))
    assert moves == ["submitting", "pending", "running", "completed"]
    assert job.exit_code == 0 and job.started_at and job.finished_at and job.scheduler_id.isdigit()
    assert squeue(job, "%k") == f"gpulab:{job.pk}"
    # The #SBATCH header reached SLURM as job properties (slurmrestd ignores #SBATCH lines in the script).
    assert squeue(job, "%P|%l|%b|%j") == "gpu|3:00|gres:gpu:2|gpulab-sleep-echo"
    assert squeue(job, "%u") == shared_user(rest_env) != rest_env["GPULAB_SLURMREST_USER"]
    output = output_of(rest_env, job)
    assert "hello-over-rest" in output and "done" in output
    answer = api_for(alice).get(f"/api/v1/jobs/{job.pk}/log/?offset=0")  # what the job page shows under the log
    assert answer.status_code == 503
    assert "is read over SSH" in answer.json()["detail"] and f"gpulab-{job.pk}.log" in answer.json()["detail"]


def test_failed_job_reports_its_exit_code(worker, api_for, alice, rest_cluster, sleep_template, job_state):
    job = job_state(launch(api_for, alice, seconds=0, exit_code=3), "failed")
    assert job.exit_code == 3 and "exit code 3" in job.error
    assert job.scheduler_state == "FAILED" and job.scheduler_reason == "NonZeroExitCode"


def test_cancel_a_running_job(worker, api_for, alice, rest_cluster, sleep_template, job_state):
    job = job_state(launch(api_for, alice, seconds=300), "running")
    assert api_for(alice).post(f"/api/v1/jobs/{job.pk}/cancel/").status_code == 202
    job = job_state(job, "cancelled", timeout=60)
    assert squeue(job, "%T") in {"CANCELLED", "COMPLETING"}
    assert job.events.filter(kind="cancel", actor=alice).exists()


@pytest.mark.timeout(400)
def test_time_limit_gives_timed_out(worker, api_for, alice, rest_cluster, sleep_template, job_state):
    job = job_state(launch(api_for, alice, seconds=600, time_minutes=1), "timed_out", timeout=240)
    assert "time limit of 1 minutes" in job.error


def test_unknown_partition_is_submit_failed_with_slurms_words(
    worker, api_for, alice, rest_cluster, sleep_template, job_state
):
    Cluster.objects.filter(pk=rest_cluster.pk).update(partitions=["debug", "gpu", "nosuch"])
    job = job_state(launch(api_for, alice, partition="nosuch"), "submit_failed")
    assert "slurmrestd refused the job" in job.error and "Invalid partition name specified" in job.error
    assert not job.scheduler_id
    assert slurm("squeue", "--states=all", "--noheader", "--format=%k").count(str(job.pk)) == 0


def test_unreachable_server_is_retried_then_submit_failed(
    worker, api_for, alice, rest_cluster, sleep_template, job_state
):
    Cluster.objects.filter(pk=rest_cluster.pk).update(api_url="http://127.0.0.1:1")
    job = job_state(launch(api_for, alice), "submit_failed", timeout=60)
    assert "Cannot reach slurmrestd" in job.error
    assert job.events.filter(kind="note", message__contains="Trying again").exists()


@pytest.mark.timeout(300)
def test_unreachable_server_keeps_a_running_job_running(
    worker, api_for, alice, rest_cluster, sleep_template, job_state
):
    job = job_state(launch(api_for, alice, seconds=20), "running")
    url = rest_cluster.api_url
    Cluster.objects.filter(pk=rest_cluster.pk).update(api_url="http://127.0.0.1:1")
    wait_for(
        lambda: "Cannot reach slurmrestd" in measurements.polls().get("local", {}).get("error", ""),
        timeout=30,
        what="a poll to find slurmrestd unreachable",
    )
    wait_for_the_node_to_end(job.scheduler_id)  # the job ends while the portal cannot ask
    wait_for_polls(rest_cluster.name)
    job.refresh_from_db()
    assert job.state == "running"
    assert not job.events.filter(to_state__in=["failed", "lost", "submit_failed"]).exists()
    Cluster.objects.filter(pk=rest_cluster.pk).update(api_url=url)
    assert job_state(job, "completed", timeout=60).exit_code == 0


@pytest.mark.timeout(300)
def test_expired_token_tells_the_admin_and_fails_no_job(
    worker, api_for, alice, rest_cluster, sleep_template, job_state, rest_env, client, admin_user
):
    job = job_state(launch(api_for, alice, seconds=15), "running")
    account = rest_cluster.service_account()
    from clusters.backends import tokens

    lapsed = expired_token(rest_env)
    account.set_api_token(lapsed, tokens.expires_at(lapsed))
    account.save()
    wait_for(
        lambda: "expired" in measurements.polls().get("local", {}).get("error", ""),
        timeout=30,
        what="a poll to find the token expired",
    )
    assert "An admin must store a new one" in measurements.polls()["local"]["error"]
    client.force_login(admin_user)
    page = client.get(reverse("admin:clusters_cluster_change", args=[rest_cluster.pk])).content.decode()
    assert "EXPIRED on" in page
    wait_for_the_node_to_end(job.scheduler_id)  # the job ends on the cluster while the portal cannot ask
    wait_for_polls(rest_cluster.name)
    job.refresh_from_db()
    assert job.state == "running"
    assert not job.events.filter(to_state__in=["failed", "lost", "submit_failed"]).exists()
    token = slurm_token(rest_env)
    account.set_api_token(token, tokens.expires_at(token))
    account.save()
    assert job_state(job, "completed", timeout=60).exit_code == 0


@pytest.mark.timeout(300)
def test_worker_killed_during_submission_submits_exactly_once(
    worker, api_for, alice, rest_cluster, sleep_template, job_state
):
    worker.stop()
    worker.start(FAILPOINTS="submit.after_sbatch=60")  # hold the worker between the POST and recording the id
    try:
        job = launch(api_for, alice, seconds=1)
        comment = f"gpulab:{job.pk}"
        wait_for(
            lambda: comment in slurm("squeue", "--states=all", "--noheader", "--format=%k"),
            timeout=60,
            what="the submission to have reached SLURM",
        )
        assert Job.objects.get(pk=job.pk).state == "submitting"
        worker.kill()
    finally:
        worker.start()  # the stale-submission sweep finds the job and the retry finds the earlier submission
    job = job_state(job, "completed", timeout=120)
    assert slurm("squeue", "--states=all", "--noheader", "--format=%k").split().count(comment) == 1
    assert "Found the earlier submission" in job.events.get(to_state="pending").message


def test_students_own_cluster_user_through_impersonation(
    worker, api_for, login, alice, rest_cluster, sleep_template, job_state, rest_env
):
    login(alice).post(
        reverse("profile"),
        {
            "cluster": rest_cluster.pk,
            "username": rest_env["GPULAB_PERSONAL_USER"],
            "auth_method": "password",
            "secret": rest_env["GPULAB_PERSONAL_PASSWORD"],
        },
    )
    job = job_state(launch(api_for, alice, seconds=0, message="as-myself"), "completed")
    assert job.account.username == rest_env["GPULAB_PERSONAL_USER"]
    assert squeue(job, "%u") == rest_env["GPULAB_PERSONAL_USER"]
    assert "as-myself" in read_whole_log(api_for, alice, job)  # read over SSH as the student's own user
    backend = get_backend(rest_cluster, job.account)
    with ssh.sftp(rest_cluster, job.account) as sftp:
        job_dir = backend._lab_path(sftp.normalize("."), "jobs", str(job.pk))
        assert sftp.listdir(job_dir) == ["output.log"]  # the script went inline: no job.sh was copied


def test_a_claimed_cluster_user_without_a_working_login_is_refused(
    worker, api_for, alice, rest_cluster, sleep_template, job_state, rest_env
):
    account = ClusterAccount(cluster=rest_cluster, user=alice, username="root", auth_method=AuthMethod.PASSWORD)
    account.set_secret("not-roots-password")
    account.save()
    job = job_state(launch(api_for, alice, seconds=0), "submit_failed")
    assert "refused the login root" in job.error
    assert slurm("squeue", "--states=all", "--noheader", "--format=%k").count(str(job.pk)) == 0


def token_of(user: str) -> str:
    """A real token of an ordinary cluster user (not the SlurmUser): slurmctld accepts it for that user alone."""
    return slurm("scontrol", "token", f"username={user}", "lifespan=600").strip().partition("=")[2]


def store_token(cluster: Cluster, token: str) -> None:
    from clusters.backends import tokens

    account = cluster.service_account()
    account.set_api_token(token, tokens.expires_at(token))
    account.save()


def test_test_connection_says_the_slurmusers_token_may_act_for_other_users(login, admin_user, rest_cluster):
    report = get_backend(rest_cluster).test_connection()
    assert report.ok and "The token of root may act for other users (asked as labrest)" in " ".join(report.lines)
    page = login(admin_user).get(reverse("admin:cluster_test", args=[rest_cluster.pk])).content.decode()
    assert "the token works for the users jobs run as" in page


def test_test_connection_refuses_a_token_that_cannot_act_for_students_and_says_what_to_store(
    login, admin_user, rest_cluster, rest_env
):
    service = rest_env["GPULAB_SLURMREST_USER"]
    store_token(rest_cluster, token_of(service))
    Cluster.objects.filter(pk=rest_cluster.pk).update(run_as="service")
    shared = get_backend(Cluster.objects.get(pk=rest_cluster.pk)).test_connection()
    said = " ".join(shared.lines)
    # The shared mode runs jobs as the shared user, never as the token's own user: it needs the SlurmUser's token too.
    assert not shared.ok and f"The token of {service} may not act for other users: asked as nobody" in said
    assert f"Jobs here run as {shared_user(rest_env)}: store" in said and f"on {service}." in said

    Cluster.objects.filter(pk=rest_cluster.pk).update(run_as="rest-user")
    report = get_backend(Cluster.objects.get(pk=rest_cluster.pk)).test_connection()
    said = " ".join(report.lines)
    assert not report.ok and "Jobs here run as each student's cluster user" in said
    assert "scontrol token username=<SlurmUser>" in said and f"on {service}." in said
    page = login(admin_user).get(reverse("admin:cluster_test", args=[rest_cluster.pk])).content.decode()
    assert "its token cannot act for the users jobs run as" in page


def test_test_connection_refuses_another_users_token_on_the_service_account(rest_cluster, rest_env):
    store_token(rest_cluster, token_of(rest_env["GPULAB_PERSONAL_USER"]))
    report = get_backend(rest_cluster).test_connection()
    said = " ".join(report.lines)
    assert not report.ok and f"asked as {rest_env['GPULAB_SLURMREST_USER']}, SLURM said" in said
    assert f"Jobs here run as {shared_user(rest_env)}: store" in said


def test_test_connection_refuses_a_shared_user_that_is_the_tokens_own_user(rest_cluster, rest_env):
    """The token's user would run students' code: the two are one."""
    store_token(rest_cluster, token_of(shared_user(rest_env)))
    report = get_backend(rest_cluster).test_connection()
    said = " ".join(report.lines)
    assert not report.ok and "whose slurmrestd token the portal holds" in said
