"""SLURM accounting on the local cluster: slurmdbd in front of MariaDB answers sacct, Test connection sees it, the
right-size report's figures are sacct's, and a cluster without accounting still follows its jobs to the end."""

import pwd
import subprocess

import pytest
from django.urls import reverse

from clusters.backends.slurm_family.accounting import parse_cpu_time, parse_size
from clusters.backends.slurm_family.settings import accounting_in_words
from clusters.identity import set_cluster_username
from clusters.kinds import get_backend
from core.choices import TERMINAL_STATES
from jobs.models import Job, JobTemplate, JobUsage
from jobs.rightsize import report_for
from tests.integration.jobs_api import launch
from tests.kind_settings import set_cluster

from . import test_slurm_rest_jobs as rest_jobs
from .conftest import slurm, wait_for


def test_local_cluster_has_accounting_and_test_connection_says_so(cluster):
    assert "gpulab" in slurm("sacctmgr", "-n", "-P", "list", "cluster", "format=cluster")
    report = get_backend(cluster).test_connection()
    assert report.facts["has_accounting"] is True
    assert "SLURM accounting: " + accounting_in_words(True) in report.lines


DEMO_USERS = "labadmin labinstructor labstudent1 labstudent2"  # scripts/local_slurm.sh's GPULAB_DEMO_USERS


def test_every_lab_user_is_registered_with_an_account(cluster, services):
    users = set(slurm("sacctmgr", "-n", "-P", "list", "assoc", "format=user").split())
    lab_users = {services["GPULAB_SERVICE_USER"], services["GPULAB_PERSONAL_USER"], services["GPULAB_SLURMREST_USER"]}
    job_users = {*services["GPULAB_STUDENT_USERS"].split(), *services.get("GPULAB_DEMO_USERS", DEMO_USERS).split()}
    assert lab_users | job_users | {services.get("GPULAB_SHARED_USER", "labshared")} <= users


def test_only_the_service_account_is_a_slurm_operator_never_a_user_jobs_run_as(services):
    levels = dict(
        line.split("|") for line in slurm("sacctmgr", "-n", "-P", "show", "user", "format=user,adminlevel").splitlines()
    )
    assert levels[services["GPULAB_SERVICE_USER"]] == "Operator"  # it makes lab sessions' reservations
    job_users = [*services["GPULAB_STUDENT_USERS"].split(), *services.get("GPULAB_DEMO_USERS", DEMO_USERS).split()]
    assert {levels[name] for name in [*job_users, services.get("GPULAB_SHARED_USER", "labshared")]} == {"None"}


BURN_BODY = """\
cat > burn.py <<'PY'
import sys, time
held = bytearray(int(sys.argv[1]) * 1024 * 1024)
start = time.time()
while time.time() - start < int(sys.argv[2]):
    pass
PY
python3 burn.py "$GPULAB_P_hold_mb" "$GPULAB_P_seconds"
echo done
"""
BURN_PARAMS = [
    {"name": "partition", "type": "choice", "label": "Partition", "default": "debug"},
    {"name": "time_minutes", "type": "int", "label": "Time", "default": 5, "min": 1, "max": 10},
    {"name": "cpus_per_task", "type": "int", "label": "CPUs", "default": 4, "min": 1, "max": 8},
    {"name": "mem_gb", "type": "int", "label": "Memory (GB)", "default": 4, "min": 1, "max": 8},
    {"name": "seconds", "type": "int", "label": "Seconds", "default": 4, "min": 1, "max": 60},
    {"name": "hold_mb", "type": "int", "label": "Memory held (MB)", "default": 200, "min": 1, "max": 1000},
]


@pytest.fixture
def burn_template(transactional_db, course):
    template = JobTemplate.objects.create(
        name="Burn a core",
        slug="burn-a-core",
        body=BURN_BODY,
        parameters=BURN_PARAMS,
        status=JobTemplate.Status.PUBLISHED,
        max_gpus=0,
        max_minutes=10,
    )
    template.courses.add(course)
    return template


def _sacct(scheduler_id: str) -> dict[str, list[str]]:
    """sacct as root on this machine, the reference the portal's figures must match: JobIDRaw → its fields."""
    out = slurm(
        "sacct",
        "-n",
        "-P",
        "--noconvert",
        f"--jobs={scheduler_id}",
        "--format=JobIDRaw,ElapsedRaw,TotalCPU,AllocCPUS,MaxRSS,ReqMem",
    )
    return {line.split("|")[0]: line.split("|")[1:] for line in out.splitlines() if line}


@pytest.fixture
def student_user(services):
    """A student's own UNIX user (scripts/local_slurm.sh students); its test directory is removed afterwards."""
    name = services["GPULAB_STUDENT_USERS"].split()[-1]
    yield name
    subprocess.run(["rm", "-rf", f"{pwd.getpwnam(name).pw_dir}/gpulab-acct-test"], check=False)


def test_right_size_figures_match_sacct_and_the_right_sized_clone_launches(
    worker, login, alice, cluster, burn_template, course, job_state, student_user
):
    # alice's jobs run as her own cluster user through the service account's sudo rule, as a class's would.
    cluster.run_as, cluster.lab_dir = "sudo", "~/gpulab-acct-test"
    set_cluster(cluster, has_accounting=True).save()
    set_cluster_username(alice, student_user)
    url = reverse("jobs:launch", args=[course.slug, burn_template.slug])
    data = {
        "cluster": cluster.pk,
        "param_partition": "debug",
        "param_time_minutes": 5,
        "param_cpus_per_task": 4,
        "param_mem_gb": 4,
        "param_seconds": 12,  # jobacct_gather samples every 5 s: MaxRSS needs a sample while the memory is held
        "param_hold_mb": 200,
    }
    response = login(alice).post(url, data)
    assert response.status_code == 302, response.context["form"].errors
    job = job_state(Job.objects.get(), *TERMINAL_STATES)
    assert job.state == "completed", (job.state, job.error)
    usage = wait_for(lambda: JobUsage.objects.filter(job=job).first(), timeout=30, what="the job's accounting row")

    rows = _sacct(job.scheduler_id)
    elapsed, total_cpu, cpus, _, req_mem = rows[job.scheduler_id]
    peak_rss = max((int(fields[3]) for fields in rows.values() if fields[3]), default=None)
    assert usage.elapsed_seconds == int(elapsed) and usage.cpus == int(cpus) == 4
    assert usage.cpu_seconds == pytest.approx(parse_cpu_time(total_cpu), abs=0.001)
    assert usage.max_rss_bytes == peak_rss > 200 * 1024 * 1024  # the 200 MB the job held, and python itself
    assert usage.requested_memory_bytes == parse_size(req_mem) == 4 * 1024**3

    lines = {line.resource: line for line in report_for(Job.objects.get(pk=job.pk)).lines}
    efficiency = round(100 * parse_cpu_time(total_cpu) / (int(elapsed) * 4), 1)
    assert lines["CPU cores"].percent == efficiency <= 30  # one busy core of four
    assert lines["Host memory"].percent == round(100 * peak_rss / (4 * 1024**3), 1)

    page = login(alice).get(job.get_absolute_url()).content.decode()
    assert "Right-size report" in page and "Launch again right-sized" in page
    form = login(alice).get(reverse("jobs:clone", args=[job.pk]) + "?rightsized=1", follow=True)
    values = {name: form.context["form"][name].value() for name in form.context["form"].fields}
    assert values["param_mem_gb"] == 1 and values["param_time_minutes"] == 1 and values["param_cpus_per_task"] < 4
    assert login(alice).post(form.request["PATH_INFO"] + "?" + form.request["QUERY_STRING"], values).status_code == 302
    # Launched: SLURM runs it with the right-sized values (running is enough: other suites' teardowns scancel
    # the lab users' jobs on this shared cluster).
    clone = job_state(Job.objects.get(cloned_from=job), "running", "completed")
    assert (clone.params["mem_gb"], clone.params["time_minutes"]) == (1, 1)
    asked = slurm("squeue", "--states=all", "-h", f"--jobs={clone.scheduler_id}", "--format=%m|%l|%C|%u").strip()
    assert asked == f"1G|1:00|{clone.params['cpus_per_task']}|{student_user}"


def test_cluster_without_accounting_still_polls_and_finishes_jobs(
    worker, api_for, alice, cluster, job_state, sleep_template, login, student_user
):
    # Followed with squeue and scontrol, as on a cluster without slurmdbd; run as the student's own cluster user.
    cluster.run_as, cluster.lab_dir = "sudo", "~/gpulab-acct-test"
    set_cluster(cluster, has_accounting=False).save()
    set_cluster_username(alice, student_user)
    job = job_state(launch(api_for, alice, seconds=12, exit_code=3), *TERMINAL_STATES)  # long enough for a report
    assert (job.state, job.exit_code) == ("failed", 3) and job.started_at and job.finished_at
    assert not JobUsage.objects.exists()
    page = login(alice).get(job.get_absolute_url()).content.decode()
    assert "Right-size report" in page and "keeps no SLURM accounting" in page


rest_env = rest_jobs.rest_env  # the fixtures, shared
rest_cluster = rest_jobs.rest_cluster


def test_rest_kind_reads_the_same_figures_from_slurmdbd(
    worker, api_for, alice, rest_cluster, sleep_template, job_state
):
    report = get_backend(rest_cluster).test_connection()
    assert report.facts["has_accounting"] is True
    assert "SLURM accounting: " + accounting_in_words(True) in report.lines
    set_cluster(rest_cluster, has_accounting=True, save=True)
    # A second job keeps the cluster polled: slurmdbd may store the first one's end a cycle after slurmctld says so.
    job_state(launch(api_for, alice, seconds=120), "running")
    job = job_state(launch(api_for, alice, partition="gpu", gpus_per_node=1, seconds=3), *TERMINAL_STATES)
    assert job.state == "completed", (job.state, job.error)
    usage = wait_for(lambda: JobUsage.objects.filter(job=job).first(), timeout=30, what="the job's accounting row")
    # Without -X: sacct adds the steps' CPU time into the job's line (with -X it shows the allocation's own, 0).
    fields = "ElapsedRaw,TotalCPU,AllocCPUS,AllocTRES,TimelimitRaw"
    out = slurm("sacct", "-n", "-P", "--noconvert", f"--jobs={job.scheduler_id}", f"--format=JobIDRaw,{fields}")
    line = next(row.split("|", 1)[1] for row in out.splitlines() if row.startswith(f"{job.scheduler_id}|"))
    elapsed, total_cpu, cpus, tres, limit = line.split("|")
    assert (usage.elapsed_seconds, usage.cpus, usage.time_limit_minutes) == (int(elapsed), int(cpus), int(limit))
    assert usage.cpu_seconds == pytest.approx(parse_cpu_time(total_cpu), abs=0.001)
    assert "gres/gpu=1" in tres and usage.gpus == 1
