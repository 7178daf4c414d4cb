"""Jobs as each student's own cluster user, on the local SLURM (scripts/local_slurm.sh makes labalice and labbob and
the service account's sudo rule): through the sudo rule over SSH and through slurmrestd impersonation.

Each job prints `id -un`; bob's job then tries to list alice's run directory, which SLURM's own output says it cannot.
Test connection judges the service account's real sudo rule, and flags labstudent's rule (ALL, as a decoy user) as too
broad.
"""

import os
import pwd
import stat
import subprocess
from pathlib import Path

import pytest
from django.urls import reverse

from clusters.choices import RunAs
from clusters.identity import set_cluster_username
from clusters.models import AuthMethod, Cluster, ClusterAccount
from jobs.models import JobTemplate
from tests.integration.conftest import WORKER_SUFFIX
from tests.integration.jobs_api import read_whole_log

LAB_DIR = "~/gpulab-identity-test" + WORKER_SUFFIX
WHOAMI_BODY = """\
echo "owner=$(id -un)"
if ls {{ peek }}; then echo "peek=allowed"; else echo "peek=refused"; fi
"""


@pytest.fixture
def students(services):
    names = os.environ.get("GPULAB_STUDENT_USERS", "labalice labbob").split()
    for name in names:
        try:
            pwd.getpwnam(name)
        except KeyError:
            pytest.fail(f"no UNIX user {name}; run `scripts/local_slurm.sh students`")
    yield names
    # The test's own jobs are cancelled by their scheduler ids (conftest's _quiesce), never by `--user`: other test
    # processes run jobs as these students too.
    for name in names:
        subprocess.run(["rm", "-rf", f"{pwd.getpwnam(name).pw_dir}/{LAB_DIR[2:]}"], check=False)


@pytest.fixture
def whoami(transactional_db, course):
    template = JobTemplate.objects.create(
        name="Who am I",
        slug="whoami",
        body=WHOAMI_BODY,
        parameters=[
            {"name": "partition", "type": "choice", "label": "Partition", "default": "debug"},
            {"name": "time_minutes", "type": "int", "label": "Time", "default": 2, "min": 1, "max": 5},
            {"name": "peek", "type": "string", "label": "Directory to list", "default": "/tmp", "max_length": 200},
        ],
        status=JobTemplate.Status.PUBLISHED,
        max_minutes=5,
    )
    template.courses.add(course)
    return template


def with_identities(cluster, mode, alice, bob, students):
    cluster.run_as, cluster.lab_dir = mode, LAB_DIR
    cluster.full_clean()
    cluster.save()
    set_cluster_username(alice, students[0])
    set_cluster_username(bob, students[1])
    return cluster


def to_slurm_rest(cluster, services) -> None:
    """The local cluster through slurmrestd, with the SlurmUser's token on the service account (which keeps its SSH
    login for the files, the logs and the terminal)."""
    from clusters.backends import tokens

    token = Path(services["GPULAB_SLURMREST_TOKEN_FILE"]).read_text().strip()
    Cluster.objects.filter(pk=cluster.pk).update(kind="slurm-rest", api_url=services["GPULAB_SLURMREST_URL"])
    cluster.refresh_from_db()
    account = cluster.service_account()
    account.set_api_token(token, tokens.expires_at(token))
    account.save()


def launch_whoami(api_for, user, **params):
    from jobs.models import Job

    body = {"template": "whoami", "cluster": "local", "params": params}
    response = api_for(user).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def run_dir(student: str, job) -> Path:
    return Path(pwd.getpwnam(student).pw_dir) / LAB_DIR[2:] / "jobs" / str(job.pk)


def check_owners_and_privacy(api_for, alice, bob, students, job_state):
    first = job_state(launch_whoami(api_for, alice), "completed")
    assert f"owner={students[0]}" in read_whole_log(api_for, alice, first)
    own = run_dir(students[0], first).stat()
    assert pwd.getpwuid(own.st_uid).pw_name == students[0] and stat.S_IMODE(own.st_mode) == 0o700

    second = job_state(launch_whoami(api_for, bob, peek=str(run_dir(students[0], first))), "completed")
    log = read_whole_log(api_for, bob, second)
    assert f"owner={students[1]}" in log and "peek=refused" in log and "Permission denied" in log
    assert first.account.username == students[0] and second.account.auth_method == AuthMethod.VIA_SERVICE


def test_jobs_run_as_each_student_through_the_sudo_rule(
    worker, api_for, alice, bob, cluster, whoami, students, job_state
):
    with_identities(cluster, RunAs.SUDO, alice, bob, students)
    check_owners_and_privacy(api_for, alice, bob, students, job_state)


def test_jobs_run_as_each_student_through_slurmrestd(
    worker, api_for, alice, bob, cluster, whoami, students, job_state, services
):
    """slurm-rest with the SlurmUser's token on the service account, which also logs in over SSH for the files."""
    to_slurm_rest(cluster, services)
    with_identities(cluster, RunAs.REST_USER, alice, bob, students)
    check_owners_and_privacy(api_for, alice, bob, students, job_state)


def test_test_connection_accepts_the_narrow_sudo_rule(login, admin_user, cluster, students):
    cluster.run_as = RunAs.SUDO
    cluster.save()
    text = login(admin_user).get(reverse("admin:cluster_test", args=[cluster.pk])).content.decode()
    assert "Login works" in text and "sudo rule of labsvc: only the portal&#x27;s commands" in text
    assert "TOO BROAD" not in text


def test_test_connection_flags_a_sudo_rule_that_allows_every_command(login, admin_user, cluster, services, students):
    cluster.run_as = RunAs.SUDO
    cluster.save()
    account = cluster.service_account()
    account.username, account.auth_method = services["GPULAB_PERSONAL_USER"], AuthMethod.KEY
    account.set_secret(Path(services["GPULAB_PERSONAL_KEY"]).read_text())
    account.save()
    text = login(admin_user).get(reverse("admin:cluster_test", args=[cluster.pk])).content.decode()
    assert "the sudo rule must change" in text
    assert "TOO BROAD: ALL: every command (ALL)" in text and "Write the rule as" in text


def test_a_portal_generated_key_logs_in_once_installed_and_runs_jobs(
    worker, api_for, login, alice, cluster, sleep_template, job_state, services
):
    from jobs.models import Job
    from tests.integration.jobs_api import launch

    user = services["GPULAB_PERSONAL_USER"]
    student = login(alice)
    student.post(reverse("profile"), {"cluster": cluster.pk, "username": user, "auth_method": "key"})
    account = ClusterAccount.objects.get(user=alice)
    test_url = reverse("test_account_login", args=[account.pk])
    page = student.post(test_url, follow=True).content.decode()
    assert f"Login as {user} failed" in page  # not installed yet

    authorized = Path(pwd.getpwnam(user).pw_dir) / ".ssh" / "authorized_keys"
    before = authorized.read_text()
    authorized.write_text(before + account.public_key + "\n")  # what the student does on the cluster
    try:
        page = student.post(test_url, follow=True).content.decode()
        assert f"Logged in as {user} on Local SLURM: it works." in page
        job = job_state(launch(api_for, alice, seconds=0, message="with-my-key"), "completed")
        assert Job.objects.get(pk=job.pk).account == account
        owner = subprocess.run(
            ["squeue", "--states=all", "--noheader", f"--jobs={job.scheduler_id}", "--format=%u"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        assert owner == user and "with-my-key" in read_whole_log(api_for, alice, job)
    finally:
        authorized.write_text(before)


@pytest.mark.parametrize("mode", [RunAs.SUDO, RunAs.REST_USER])
def test_a_student_cancels_their_job_running_as_their_own_user(
    worker, api_for, alice, bob, cluster, sleep_template, students, job_state, services, mode
):
    from tests.integration.jobs_api import launch

    if mode == RunAs.REST_USER:
        to_slurm_rest(cluster, services)
    with_identities(cluster, mode, alice, bob, students)
    job = job_state(launch(api_for, alice, seconds=300), "running")
    owner = subprocess.run(
        ["squeue", "--noheader", f"--jobs={job.scheduler_id}", "--format=%u"], capture_output=True, text=True
    ).stdout.strip()
    assert owner == students[0]
    assert api_for(bob).post(f"/api/v1/jobs/{job.pk}/cancel/").status_code == 404
    assert api_for(alice).post(f"/api/v1/jobs/{job.pk}/cancel/").status_code == 202
    job_state(job, "cancelled", timeout=60)
    state = subprocess.run(
        ["squeue", "--states=all", "--noheader", f"--jobs={job.scheduler_id}", "--format=%T"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert state in {"CANCELLED", "COMPLETING"}
