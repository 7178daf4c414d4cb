"""A sweep on the local SLURM cluster: one sbatch --array, each task its own values, runs followed as jobs, at most
K at once, cancelled with one request, one message at its end; a sweep of GPUs, which no array can hold, run by run."""

import re
import time

import pytest
from django.urls import reverse

from core.choices import TERMINAL_STATES
from jobs.models import Job, JobTemplate
from notifications.models import Notification
from sweeps.models import Sweep
from tests.conftest import SLEEP_TEMPLATE_BODY, SLEEP_TEMPLATE_PARAMS
from tests.integration.jobs_api import read_whole_log

from . import test_slurm_rest_jobs
from .conftest import slurm, wait_for

rest_env, rest_cluster = test_slurm_rest_jobs.rest_env, test_slurm_rest_jobs.rest_cluster  # slurmrestd's fixtures


@pytest.fixture
def echo_template(sleep_template, course):
    """The sleep template, also printing the values it was given: each run's log says which run it was."""
    template = JobTemplate.objects.create(
        name="Sleep and echo values",
        slug="sleep-echo-values",
        body="printf 'seconds=%s code=%s\\n' {{ seconds }} {{ exit_code }}\n" + SLEEP_TEMPLATE_BODY,
        parameters=SLEEP_TEMPLATE_PARAMS,
        status=JobTemplate.Status.PUBLISHED,
        max_gpus=4,
        max_minutes=10,
    )
    template.courses.add(course)
    return template


def launch_sweep(api_for, user, template, seconds: list[int], **extra) -> Sweep:
    body = {
        "template": template.slug,
        "cluster": "local",
        "params": {"partition": "debug", "time_minutes": 2, "gpus_per_node": 0},
        "swept": {"seconds": seconds},
        "mode": "zip",
        **extra,
    }
    response = api_for(user).post("/api/v1/sweeps/", body, format="json")
    assert response.status_code == 201, response.json()
    return Sweep.objects.get(pk=response.json()["id"])


def tasks_of(array_id: str) -> list[tuple[str, str, str]]:
    """(task id, state, comment) of each task the scheduler lists for the array, one line per task."""
    listed = slurm("squeue", "--states=all", "-r", "--noheader", f"--jobs={array_id}", "--format=%i|%T|%k")
    return [tuple(line.split("|")) for line in listed.splitlines() if line.strip()]


def submitted(sweep: Sweep) -> Sweep:
    done = wait_for(
        lambda: Sweep.objects.filter(pk=sweep.pk, state__in=["submitted", "submit_failed"]).first(),
        what="the array's sbatch",
    )
    assert done.state == "submitted", done.error
    return done


def test_a_sweep_of_four_is_one_array_two_at_a_time_each_run_with_its_own_values(
    worker, api_for, login, alice, cluster, echo_template, course
):
    course.max_concurrent_jobs = 2
    course.save()
    sweep = submitted(launch_sweep(api_for, alice, echo_template, [3, 4, 5, 6]))
    assert sweep.max_concurrent == 2
    most_at_once, seen = 0, set()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:  # the scheduler's own view, while the array runs
        tasks = tasks_of(sweep.scheduler_id)
        seen |= {task for task, _, _ in tasks}
        most_at_once = max(most_at_once, sum(state == "RUNNING" for _, state, _ in tasks))
        if Job.objects.filter(sweep_run__sweep=sweep).exclude(state__in=TERMINAL_STATES).count() == 0:
            break
        time.sleep(0.3)
    assert most_at_once == 2  # never more than the limit, and the limit used
    # One submission: every task is of the one array, and carries the sweep's comment.
    assert seen == {f"{sweep.scheduler_id}_{i}" for i in range(4)}
    assert {comment for _, _, comment in tasks_of(sweep.scheduler_id)} == {f"gpulab:{sweep.pk}"}
    runs = list(Job.objects.filter(sweep_run__sweep=sweep).order_by("sweep_run__index"))
    assert [run.state for run in runs] == ["completed"] * 4
    for index, (run, seconds) in enumerate(zip(runs, [3, 4, 5, 6], strict=True)):
        assert run.scheduler_id == f"{sweep.scheduler_id}_{index}" and run.exit_code == 0
        log = read_whole_log(api_for, alice, run)
        assert f"seconds={seconds} code=0" in log and "done" in log, log
        assert login(alice).get(run.get_absolute_url()).status_code == 200
    ended = wait_for(lambda: Notification.objects.filter(user=alice, event="sweep_ended").first(), what="the message")
    assert "4 runs, 4 completed" in ended.text and ended.url.endswith(sweep.get_absolute_url())
    told = Notification.objects.filter(user=alice)
    assert set(told.values_list("key", flat=True)) == {f"sweep_ended:sweep:{sweep.pk}"}  # once, and none per run


def test_cancelling_a_sweep_cancels_every_task(worker, api_for, alice, cluster, echo_template):
    sweep = submitted(launch_sweep(api_for, alice, echo_template, [60, 61, 62], max_concurrent=2))
    wait_for(lambda: Job.objects.filter(sweep_run__sweep=sweep, state="running").exists(), what="a run to start")
    waiting = Job.objects.get(sweep_run__sweep=sweep, sweep_run__index=2)  # one run cancelled on its own first
    assert api_for(alice).post(f"/api/v1/jobs/{waiting.pk}/cancel/").status_code == 202
    wait_for(lambda: Job.objects.filter(pk=waiting.pk, state="cancelled").exists(), what="run 2 to be cancelled")
    assert Job.objects.filter(sweep_run__sweep=sweep, state__in=["running", "pending"]).count() == 2
    response = api_for(alice).post(f"/api/v1/sweeps/{sweep.pk}/cancel/")
    assert response.status_code == 202
    wait_for(
        lambda: set(Job.objects.filter(sweep_run__sweep=sweep).values_list("state", flat=True)) == {"cancelled"},
        what="every run cancelled",
    )
    assert {state for _, state, _ in tasks_of(sweep.scheduler_id)} <= {"CANCELLED", "COMPLETING"}


@pytest.mark.timeout(300)
def test_a_worker_killed_after_the_array_s_sbatch_submits_it_exactly_once(
    worker, api_for, alice, cluster, echo_template
):
    worker.stop()
    worker.start(FAILPOINTS="sweep.after_sbatch=60")  # hold the worker between the sbatch and recording the array
    sweep = launch_sweep(api_for, alice, echo_template, [1, 2])
    comment = f"gpulab:{sweep.pk}"
    wait_for(
        lambda: comment in slurm("squeue", "--states=all", "-r", "--noheader", "--format=%k"),
        what="the array's sbatch to have run",
    )
    assert Sweep.objects.get(pk=sweep.pk).state == "submitting"
    worker.kill()
    worker.start()  # the stale-sweep pass sends it again, and the retry finds the earlier array
    wait_for(
        lambda: set(Job.objects.filter(sweep_run__sweep=sweep).values_list("state", flat=True)) == {"completed"},
        timeout=120,
        what="both runs to complete",
    )
    listed = slurm("squeue", "--states=all", "-r", "--noheader", "--format=%F|%k").split()
    assert len({line for line in listed if line.endswith(f"|{comment}")}) == 1  # one array, two tasks
    sweep.refresh_from_db()
    run = Job.objects.filter(sweep_run__sweep=sweep).first()
    assert "Found the earlier submission" in run.events.get(to_state="pending").message
    assert sweep.scheduler_id in run.scheduler_id


def test_a_sweep_through_slurmrestd_is_one_array_each_run_with_its_own_values(
    worker, api_for, login, alice, rest_cluster, echo_template, rest_env
):
    # As the student's own cluster user, reached over SSH: each run's values and log are files in its run directory.
    login(alice).post(
        reverse("profile"),
        {
            "cluster": rest_cluster.pk,
            "username": rest_env["GPULAB_PERSONAL_USER"],
            "auth_method": "password",
            "secret": rest_env["GPULAB_PERSONAL_PASSWORD"],
        },
    )
    sweep = submitted(launch_sweep(api_for, alice, echo_template, [1, 2], max_concurrent=1))
    wait_for(
        lambda: set(Job.objects.filter(sweep_run__sweep=sweep).values_list("state", flat=True)) == {"completed"},
        timeout=90,
        what="both runs to complete",
    )
    assert {comment for _, _, comment in tasks_of(sweep.scheduler_id)} == {f"gpulab:{sweep.pk}"}
    for index, run in enumerate(Job.objects.filter(sweep_run__sweep=sweep).order_by("sweep_run__index")):
        assert run.scheduler_id == f"{sweep.scheduler_id}_{index}"
        assert f"seconds={index + 1} code=0" in read_whole_log(api_for, alice, run)
    # A run's own Cancel, and the sweep's, through slurmrestd.
    again = submitted(launch_sweep(api_for, alice, echo_template, [60, 61], max_concurrent=1))
    first = wait_for(lambda: Job.objects.filter(sweep_run__sweep=again, state="running").first(), what="a run to start")
    assert api_for(alice).post(f"/api/v1/jobs/{first.pk}/cancel/").status_code == 202
    wait_for(lambda: Job.objects.filter(pk=first.pk, state="cancelled").exists(), what="the run to be cancelled")
    assert api_for(alice).post(f"/api/v1/sweeps/{again.pk}/cancel/").status_code == 202
    wait_for(
        lambda: set(Job.objects.filter(sweep_run__sweep=again).values_list("state", flat=True)) == {"cancelled"},
        what="every run cancelled",
    )


@pytest.mark.timeout(240)
def test_a_running_run_s_terminal_opens_in_its_own_directory_with_its_own_values(
    worker, web, api_for, alice, cluster, echo_template
):
    from .test_terminal import open_socket, plain, read_until

    sweep = submitted(launch_sweep(api_for, alice, echo_template, [120, 121]))
    run = wait_for(
        lambda: Job.objects.filter(sweep_run__sweep=sweep, sweep_run__index=1, state="running").first(),
        what="run 1 to start",
    )
    with open_socket(web, alice, run) as socket:
        socket.send(b'echo "in-dir=$PWD job-var=$GPULAB_JOB_ID seconds=$GPULAB_P_seconds"\n')
        output, closed = read_until(socket, lambda out: re.search(r"in-dir=\S+ job-var=\S+ seconds=\S+\r\n", out))
    answer = re.search(r"in-dir=(\S+) job-var=(\S+) seconds=(\S+)\r\n", plain(output))
    assert answer, (output, closed)
    assert answer[1].endswith(f"/jobs/{run.pk}") and answer[2] == str(run.pk) and answer[3] == "121", output


@pytest.fixture
def gpus_template(course):
    """GPUs per node marked sweepable, and each run saying what SLURM gave it."""
    course.max_gpus = 4
    course.save()
    template = JobTemplate.objects.create(
        name="GPUs and echo",
        slug="gpus-echo",
        body='echo "gpus=$SLURM_GPUS_ON_NODE"\n' + SLEEP_TEMPLATE_BODY,
        parameters=[{**p, "sweep": True} if p["name"] == "gpus_per_node" else p for p in SLEEP_TEMPLATE_PARAMS],
        status=JobTemplate.Status.PUBLISHED,
        max_gpus=4,
        max_minutes=10,
    )
    template.courses.add(course)
    return template


def gpu_sweep(api_for, user, gpus: list[int], seconds: int, at_once: int) -> Sweep:
    body = {
        "template": "gpus-echo",
        "cluster": "local",
        "params": {"partition": "gpu", "time_minutes": 2, "seconds": seconds},
        "swept": {"gpus_per_node": gpus},
        "mode": "grid",
        "max_concurrent": at_once,
    }
    response = api_for(user).post("/api/v1/sweeps/", body, format="json")
    assert response.status_code == 201, response.json()
    sweep = Sweep.objects.get(pk=response.json()["id"])
    assert sweep.submission == "runs"
    return sweep


def accounted(ids: list[str]) -> dict[str, list[str]]:
    """JobID → [Start, End, AllocTRES] as slurmdbd recorded them, once every job has its end."""

    def read():
        listed = slurm("sacct", "-n", "-X", "-P", f"--jobs={','.join(ids)}", "--format=JobID,Start,End,AllocTRES")
        rows = {line.split("|")[0]: line.split("|")[1:] for line in listed.splitlines() if line.strip()}
        return rows if set(rows) == set(ids) and all(row[1][:1].isdigit() for row in rows.values()) else None

    return wait_for(read, what="the runs in SLURM's accounting")


def test_a_sweep_of_gpus_goes_run_by_run_one_at_a_time_each_run_holding_its_own_gpus(
    worker, api_for, alice, cluster, gpus_template
):
    sweep = gpu_sweep(api_for, alice, [1, 2], seconds=2, at_once=1)
    wait_for(
        lambda: set(Job.objects.filter(sweep_run__sweep=sweep).values_list("state", flat=True)) == {"completed"},
        timeout=150,
        what="both runs to complete",
    )
    runs = list(Job.objects.filter(sweep_run__sweep=sweep).order_by("sweep_run__index"))
    ids = [run.scheduler_id for run in runs]
    assert all(i.isdigit() for i in ids) and len(set(ids)) == 2  # two jobs of their own, no array
    for run, gpus in zip(runs, [1, 2], strict=True):
        assert f"gpus={gpus}" in read_whole_log(api_for, alice, run)
    rows = accounted(ids)
    assert "gres/gpu=1" in rows[ids[0]][2] and "gres/gpu=2" in rows[ids[1]][2]
    assert rows[ids[1]][0] >= rows[ids[0]][1]  # on SLURM's clock: the second started once the first had ended
    assert Sweep.objects.get(pk=sweep.pk).state == "submitted"
    ended = wait_for(lambda: Notification.objects.filter(user=alice, event="sweep_ended").first(), what="the message")
    assert "2 runs, 2 completed" in ended.text
    # Once for the sweep, none per run (a time-limit reminder for a run slowed by a loaded node is not a run's ending).
    assert Notification.objects.filter(user=alice).exclude(event="time_limit_soon").count() == 1


def test_cancelling_a_run_by_run_sweep_stops_the_run_out_and_the_rest_never_reach_slurm(
    worker, api_for, alice, cluster, gpus_template
):
    sweep = gpu_sweep(api_for, alice, [1, 2, 3], seconds=120, at_once=1)
    first = wait_for(lambda: Job.objects.filter(sweep_run__sweep=sweep, state="running").first(), what="a run")
    assert api_for(alice).post(f"/api/v1/sweeps/{sweep.pk}/cancel/").status_code == 202
    wait_for(
        lambda: set(Job.objects.filter(sweep_run__sweep=sweep).values_list("state", flat=True)) == {"cancelled"},
        what="every run cancelled",
    )
    state = wait_for(
        lambda: slurm("sacct", "-n", "-X", "-P", f"--jobs={first.scheduler_id}", "--format=State").strip() or None,
        what="the run in SLURM's accounting",
    )
    assert state.startswith("CANCELLED"), state
    rest = Job.objects.filter(sweep_run__sweep=sweep).exclude(pk=first.pk)
    assert set(rest.values_list("scheduler_id", flat=True)) == {""}  # never submitted
