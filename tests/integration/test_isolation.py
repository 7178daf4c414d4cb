"""Isolation proved from inside a student's job, on the local SLURM (sshd on 127.0.0.1, the sudo rule and users of
scripts/local_slurm.sh): what a hostile student can do from a shell in their own job's allocation.

alice's job writes a checkpoint and a log in its run directory and she has uploaded data through Files; bob, from a
shell in his own running job (as his own user, inside its allocation: `srun --jobid=<his job> --overlap`, run as
labbob, and the portal's own terminal), can neither list, read nor change any of it, cannot see, cancel or change
alice's job, has no sudo rule (`sudo -n -l` lists nothing; `sudo -u labalice` is refused) and cannot make a SLURM
reservation. Both lab layouts are tried: the lab directory in each student's home, and one shared absolute lab
directory as the demo uses (jobs/, students/ and .gpulab-runtime/ at 1733). In the shared mode, the one shared user's
shell holds no privilege either: the service account, which holds the sudo rule and SLURM operator level, never runs
a job.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import stat
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from clusters.choices import RunAs
from clusters.identity import set_cluster_username
from jobs.models import JobTemplate

from .conftest import cancel_own_jobs
from .test_files import upload
from .test_terminal import open_socket, plain, read_until

# A student's shell tries to reserve the node and to cancel others' jobs: alone on the node.
pytestmark = pytest.mark.slurm_exclusive

HOME_LAB = "~/gpulab-isolation-test"
SHARED_LAB = Path("/var/tmp/gpulab-isolation-lab")  # the demo's layout (scripts/local_slurm.sh, ensure_lab_root)
RESERVATION = "gpulab-isolation-attempt"
# What alice's job leaves behind: a checkpoint and a log line with a secret, then it keeps running.
WORK_BODY = """\
echo "log-secret-of-$(id -un)"
echo "checkpoint-secret-of-$(id -un)" > checkpoint.pt
sleep {{ seconds }}
"""
# Run by bob's user inside his own job's allocation; each attack prints name=allowed or name=refused.
ATTACKS = r"""
lab={lab}; run={run}; upload={upload}; victim={victim_id}
try() {{ name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name=allowed"; else echo "$name=refused"; fi; }}
echo "whoami=$(id -un)"
echo "groups=$(id -nG)"
try ls_lab ls "$lab"
try ls_jobs ls "$lab/jobs"
try ls_run ls "$run"
try cat_log cat "$run/output.log"
try cat_checkpoint cat "$run/checkpoint.pt"
try cat_upload cat "$upload"
try touch_run touch "$run/pwned"
try touch_lab touch "$lab/pwned"
try rm_checkpoint rm -f "$run/checkpoint.pt"
try scancel scancel "$victim"
try hold scontrol hold "$victim"
try update scontrol update JobId="$victim" TimeLimit=1
case "$(scontrol show job "$victim" 2>/dev/null)" in
  *"JobId=$victim "*) echo show_job=allowed ;;
  *) echo show_job=refused ;;
esac
case "$(squeue -h -o %i -j "$victim" 2>/dev/null)" in "$victim") echo squeue=allowed ;; *) echo squeue=refused ;; esac
case "$(sacct -n -X -a -o jobid -j "$victim" 2>/dev/null)" in
  *"$victim"*) echo sacct=allowed ;;
  *) echo sacct=refused ;;
esac
try services_env cat {local}/services.env
redis_ping() ( exec 3<>/dev/tcp/127.0.0.1/{redis_port} && printf 'PING\r\n' >&3 && IFS= read -r -t 3 said <&3 &&
  [[ "$said" == "+PONG"* ]] )
try redis redis_ping
try cluster_env cat {local}/cluster.env
try sudo_as_other sudo -n -u {victim_user} true
try sudo_any sudo -n true
try reservation scontrol create reservation ReservationName={reservation} StartTime=now Duration=5 \
  Users="$(id -un)" NodeCnt=1
echo "sudo_l=[$(sudo -n -l 2>&1 | tr '\n' ' ')]"
echo "attacks-done"
"""
ATTACK_NAMES = [
    "ls_lab", "ls_jobs", "ls_run", "cat_log", "cat_checkpoint", "cat_upload", "touch_run", "touch_lab",
    "rm_checkpoint", "scancel", "hold", "update", "show_job", "squeue", "sudo_as_other", "sudo_any", "reservation",
    "sacct", "services_env", "cluster_env", "redis",
]  # fmt: skip


@pytest.fixture
def students(services, transactional_db):
    names = os.environ.get("GPULAB_STUDENT_USERS", "labalice labbob").split()
    for name in [*names, services.get("GPULAB_SHARED_USER", "labshared")]:
        try:
            pwd.getpwnam(name)
        except KeyError:
            pytest.fail(f"no UNIX user {name}; run `scripts/local_slurm.sh start` (or `students`)")
    yield names
    cancel_own_jobs()  # this test's jobs only, before their folders go (other tests and a demo share these users)
    for name in names:
        shutil.rmtree(Path(pwd.getpwnam(name).pw_dir) / HOME_LAB[2:], ignore_errors=True)
    subprocess.run(["scontrol", "delete", f"reservation={RESERVATION}"], capture_output=True, check=False)


@pytest.fixture
def work_template(transactional_db, course):
    template = JobTemplate.objects.create(
        name="Work and wait",
        slug="work-and-wait",
        body=WORK_BODY,
        parameters=[
            {"name": "partition", "type": "choice", "label": "Partition", "default": "debug"},
            {"name": "time_minutes", "type": "int", "label": "Time", "default": 5, "min": 1, "max": 5},
            {"name": "seconds", "type": "int", "label": "Seconds", "default": 240, "min": 1, "max": 290},
        ],
        status=JobTemplate.Status.PUBLISHED,
        max_minutes=5,
    )
    template.courses.add(course)
    return template


@pytest.fixture(params=["home", "shared"], ids=["lab-in-each-home", "shared-lab-directory"])
def lab(request, cluster, services):
    """The lab directory: under each student's home, or one shared absolute directory laid out as the demo's."""
    if request.param == "home":
        yield HOME_LAB
        return
    SHARED_LAB.mkdir(exist_ok=True)
    shutil.chown(SHARED_LAB, services["GPULAB_SERVICE_USER"], services["GPULAB_SERVICE_USER"])
    SHARED_LAB.chmod(0o755)
    for sub in ("jobs", "students", ".gpulab-runtime"):
        (SHARED_LAB / sub).mkdir(exist_ok=True)
        (SHARED_LAB / sub).chmod(0o1733)
    yield str(SHARED_LAB)
    shutil.rmtree(SHARED_LAB, ignore_errors=True)


def launch_work(api_for, user):
    from jobs.models import Job

    body = {"template": "work-and-wait", "cluster": "local", "params": {}}
    response = api_for(user).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def lab_path(lab: str, user: str) -> Path:
    return Path(pwd.getpwnam(user).pw_dir) / lab[2:] if lab.startswith("~/") else Path(lab)


def wait_for_file(path: Path, timeout: float = 60) -> None:
    from .conftest import wait_for

    wait_for(lambda: path.exists() or None, timeout=timeout, what=f"{path} to appear")


def in_job(user: str, scheduler_id: str, script: str) -> str:
    """`script` run by `user` inside the allocation of their job `scheduler_id` (a step beside its batch script)."""
    argv = ["runuser", "-u", user, "--", "srun", f"--jobid={scheduler_id}", "--overlap", "--quiet", "--chdir=/tmp"]
    argv += ["bash", "-c"]
    done = subprocess.run([*argv, script], capture_output=True, text=True, timeout=120, check=False)
    assert "attacks-done" in done.stdout or "probe-done" in done.stdout, (done.stdout, done.stderr)
    return done.stdout


def verdicts(output: str) -> dict[str, str]:
    return dict(re.findall(r"^(\w+)=(allowed|refused)$", output, re.MULTILINE))


def squeue_state(scheduler_id: str) -> str:
    shown = subprocess.run(["squeue", "-h", "-o", "%T", "-j", scheduler_id], capture_output=True, text=True)
    return shown.stdout.strip()


@pytest.mark.timeout(300)
def test_from_a_shell_in_his_own_job_a_student_reaches_nothing_of_another_students(
    worker, api_for, alice, bob, cluster, lab, work_template, students, job_state
):
    alice_user, bob_user = students
    cluster.run_as, cluster.lab_dir = RunAs.SUDO, lab
    cluster.full_clean()
    cluster.save()
    set_cluster_username(alice, alice_user)
    set_cluster_username(bob, bob_user)

    # alice uploads data through Files, and her job writes a checkpoint and a log line.
    files = reverse("api:files-cluster", args=[cluster.pk])
    upload(api_for(alice), files, "data.txt", b"upload-secret-of-alice\n", chunk=1024)
    alices = job_state(launch_work(api_for, alice), "running")
    bobs = job_state(launch_work(api_for, bob), "running")
    root = lab_path(lab, alice_user)
    run_dir = root / "jobs" / str(alices.pk)
    uploaded = root / ("students/" + alice_user if lab == str(SHARED_LAB) else "") / "data.txt"
    wait_for_file(run_dir / "checkpoint.pt")

    # What the portal made is alice's alone: 0700 folders, a 0600 upload.
    for folder in (run_dir, uploaded.parent) if lab == str(SHARED_LAB) else (run_dir, root, root / "jobs"):
        owned = folder.stat()
        assert (pwd.getpwuid(owned.st_uid).pw_name, stat.S_IMODE(owned.st_mode)) == (alice_user, 0o700), folder
    assert stat.S_IMODE(uploaded.stat().st_mode) == 0o600 and uploaded.read_bytes() == b"upload-secret-of-alice\n"

    script = ATTACKS.format(
        lab=shlex.quote(str(root)),
        run=shlex.quote(str(run_dir)),
        upload=shlex.quote(str(uploaded)),
        victim_id=alices.scheduler_id,
        victim_user=alice_user,
        reservation=RESERVATION,
        local=shlex.quote(os.environ.get("GPULAB_LOCAL_DIR", "/var/lib/gpulab-local")),  # the services' passwords
        redis_port=urlsplit(os.environ["REDIS_URL"]).port or 6379,  # the portal's sessions, cache and broker
    )
    output = in_job(bob_user, bobs.scheduler_id, script)
    said = verdicts(output)
    assert f"whoami={bob_user}" in output
    assert set(said) == set(ATTACK_NAMES), output
    allowed = sorted(name for name, verdict in said.items() if verdict == "allowed")
    if lab == str(SHARED_LAB):  # the shared lab directory itself is readable by all (the staged workloads)
        allowed = [name for name in allowed if name != "ls_lab"]
    assert allowed == [], output
    assert "may run the following commands" not in re.search(r"sudo_l=\[(.*)\]", output).group(1), output
    groups = re.search(r"^groups=(.*)$", output, re.MULTILINE).group(1).split()
    assert not {"sudo", "wheel", "admin"} & set(groups)

    # Nothing of alice's changed: her job runs on, her checkpoint is there, no reservation was made.
    assert squeue_state(alices.scheduler_id) == "RUNNING"
    assert (run_dir / "checkpoint.pt").read_text() == f"checkpoint-secret-of-{alice_user}\n"
    assert not (run_dir / "pwned").exists() and not (root / "pwned").exists()
    shown = subprocess.run(["scontrol", "show", "reservation", RESERVATION], capture_output=True, text=True)
    assert "ReservationName=" not in shown.stdout


@pytest.mark.timeout(300)
def test_the_portals_own_terminal_in_a_students_job_has_no_sudo_and_cannot_read_another_students_run(
    worker, web, api_for, alice, bob, cluster, work_template, students, job_state
):
    alice_user, bob_user = students
    cluster.run_as, cluster.lab_dir = RunAs.SUDO, HOME_LAB
    cluster.save()
    set_cluster_username(alice, alice_user)
    set_cluster_username(bob, bob_user)
    alices = job_state(launch_work(api_for, alice), "running")
    bobs = job_state(launch_work(api_for, bob), "running")
    checkpoint = lab_path(HOME_LAB, alice_user) / "jobs" / str(alices.pk) / "checkpoint.pt"
    wait_for_file(checkpoint)
    typed = (
        f"id -un; sudo -n -l; cat {shlex.quote(str(checkpoint))}; scancel {alices.scheduler_id}; "
        f"scontrol create reservation ReservationName={RESERVATION} StartTime=now Duration=5 Users=$(id -un) "
        "NodeCnt=1; echo probe-$((40+2))\n"
    )
    with open_socket(web, bob, bobs) as socket:
        socket.send(typed.encode())
        output, _ = read_until(socket, lambda out: "probe-42" in out, timeout=60)
    text = plain(output)
    assert "probe-42" in text, text
    assert re.search(rf"^\r?{bob_user}\r?$", text, re.MULTILINE), text  # the shell is bob's own user
    assert "may run the following commands" not in text and "checkpoint-secret" not in text
    assert "Permission denied" in text  # the checkpoint
    assert squeue_state(alices.scheduler_id) == "RUNNING"
    shown = subprocess.run(["scontrol", "show", "reservation", RESERVATION], capture_output=True, text=True)
    assert "ReservationName=" not in shown.stdout


@pytest.mark.timeout(300)
def test_in_the_shared_mode_jobs_run_as_the_unprivileged_shared_user_never_the_service_account(
    worker, api_for, alice, bob, cluster, work_template, students, job_state, services
):
    shared, service = services.get("GPULAB_SHARED_USER", "labshared"), services["GPULAB_SERVICE_USER"]
    assert (cluster.run_as, cluster.shared_user) == (RunAs.SERVICE, shared)
    job = job_state(launch_work(api_for, alice), "running")
    owner = subprocess.run(["squeue", "-h", "-o", "%u", "-j", job.scheduler_id], capture_output=True, text=True)
    assert owner.stdout.strip() == shared != service
    probe = (
        "echo \"whoami=$(id -un)\"; echo \"sudo_l=[$(sudo -n -l 2>&1 | tr '\\n' ' ')]\"; "
        f"if sudo -n -u {students[1]} true >/dev/null 2>&1; then echo sudo_as_other=allowed; "
        "else echo sudo_as_other=refused; fi; "
        f"if scontrol create reservation ReservationName={RESERVATION} StartTime=now Duration=5 "
        f"Users={shared} NodeCnt=1 >/dev/null 2>&1; then echo reservation=allowed; else echo reservation=refused; fi; "
        "echo probe-done"
    )
    output = in_job(shared, job.scheduler_id, probe)
    assert f"whoami={shared}" in output
    assert verdicts(output) == {"sudo_as_other": "refused", "reservation": "refused"}, output
    assert "may run the following commands" not in output
    level = subprocess.run(
        ["sacctmgr", "-n", "-P", "show", "user", shared, "format=adminlevel"], capture_output=True, text=True
    )
    assert level.stdout.strip() in {"None", ""}


def test_a_files_folder_another_student_made_first_is_refused_in_words_and_nothing_is_written_there(
    api_for, alice, cluster, services, students
):
    """Under the shared lab directory's 1733 `students/`, bob makes `students/<alice's user>` before alice ever opens
    Files, world-writable, to read what the portal would put in it. The portal will not use a folder alice's user
    cannot make private: Files says so in words (not "check its permissions"), and alice's upload never lands."""
    alice_user, bob_user = students
    SHARED_LAB.mkdir(exist_ok=True)
    shutil.chown(SHARED_LAB, services["GPULAB_SERVICE_USER"], services["GPULAB_SERVICE_USER"])
    SHARED_LAB.chmod(0o755)
    (SHARED_LAB / "students").mkdir(exist_ok=True)
    (SHARED_LAB / "students").chmod(0o1733)
    try:
        trap = SHARED_LAB / "students" / alice_user
        subprocess.run(["runuser", "-u", bob_user, "--", "mkdir", "-m", "777", str(trap)], check=True)
        subprocess.run(["runuser", "-u", bob_user, "--", "chmod", "777", str(trap)], check=True)
        cluster.run_as, cluster.lab_dir = RunAs.SUDO, str(SHARED_LAB)
        cluster.full_clean()
        cluster.save()
        set_cluster_username(alice, alice_user)

        files = reverse("api:files-cluster", args=[cluster.pk])
        listed = api_for(alice).get(files, {"path": ""})
        assert listed.status_code == 400, listed.content
        said = listed.json()["detail"]
        assert f"({SHARED_LAB}/students/{alice_user}) was made by another account" in said, said
        assert "Ask the cluster's admin to remove it" in said and "check its permissions" not in said
        sent = api_for(alice).put(
            files + "upload/?path=&name=data.txt&size=7&offset=0", b"secret\n", content_type="application/octet-stream"
        )
        assert sent.status_code == 400, sent.content
        assert list(trap.iterdir()) == [] and pwd.getpwuid(trap.stat().st_uid).pw_name == bob_user
    finally:
        shutil.rmtree(SHARED_LAB, ignore_errors=True)
