"""A sweep that an array cannot hold goes run by run: a sweep of GPUs on SLURM (each run its own #SBATCH header), and
every sweep on a kind without arrays. Without a cluster: what the launch makes, how many runs are let out, and that a
run's end lets the next one go. The cluster's side is in tests/integration/test_sweeps.py and test_k8s_sweeps.py."""

import pytest
from django.db import transaction

from core.choices import JobState
from jobs import submission as job_submission
from jobs.models import Job
from jobs.states import transition
from sweeps import cancellation
from sweeps.models import Sweep, SweepState, SweepSubmission
from sweeps.release import release
from tests.conftest import SLEEP_TEMPLATE_PARAMS

pytestmark = pytest.mark.django_db(transaction=True)

SUBMIT_JOB, CANCEL_JOB = "workers.tasks.submit_job", "workers.tasks.cancel_job"
SUBMIT_SWEEP = "sweeps.tasks.submit_sweep"


@pytest.fixture
def sent(monkeypatch):
    calls = []
    monkeypatch.setattr("core.enqueue.send", lambda name, args: calls.append((name, args)))
    return calls


@pytest.fixture
def gpu_template(sleep_template, course):
    course.max_gpus, course.max_concurrent_jobs = 8, 4  # room for the runs of one sweep of 1, 2 and 3 GPUs at once
    course.save()
    sleep_template.parameters = [
        {**p, "sweep": True} if p["name"] == "gpus_per_node" else p for p in SLEEP_TEMPLATE_PARAMS
    ]
    sleep_template.save()
    return sleep_template


def gpu_sweep(api_for, user, gpus=(1, 2, 3), **extra) -> Sweep:
    body = {
        "template": "sleep-echo",
        "cluster": "local",
        "params": {"partition": "debug", "time_minutes": 6, "seconds": 5},
        "swept": {"gpus_per_node": list(gpus)},
        "mode": "grid",
        **extra,
    }
    response = api_for(user).post("/api/v1/sweeps/", body, format="json")
    assert response.status_code == 201, response.json()
    return Sweep.objects.get(pk=response.json()["id"])


def runs_of(sweep: Sweep) -> list[Job]:
    return list(Job.objects.filter(sweep_run__sweep=sweep).order_by("sweep_run__index"))


def test_a_sweep_of_gpus_renders_each_run_with_its_own_header_and_queues_the_sweep(
    api_for, alice, cluster, gpu_template, sent
):
    sweep = gpu_sweep(api_for, alice)
    assert sweep.submission == SweepSubmission.RUNS
    assert sweep.max_concurrent == 2  # counted as its largest run: 8 GPUs hold any two runs of at most 3
    runs = runs_of(sweep)
    for run, gpus in zip(runs, (1, 2, 3), strict=True):
        assert f"#SBATCH --gres=gpu:{gpus}\n" in run.script and run.gpus == gpus
        assert f"GPULAB_JOB_ID={run.pk}" in run.script and f"GPULAB_P_gpus_per_node={gpus}" in run.script
        assert run.in_array and run.state == JobState.QUEUED
    assert sent == [(SUBMIT_SWEEP, (str(sweep.pk),))]  # the sweep lets its runs out; none is sent on its own


def test_a_sweep_of_values_alone_is_still_one_array(api_for, alice, cluster, gpu_template, sent):
    body = {
        "template": "sleep-echo",
        "cluster": "local",
        "params": {"partition": "debug", "time_minutes": 6, "gpus_per_node": 1},
        "swept": {"seconds": [1, 2]},
        "mode": "grid",
    }
    assert api_for(alice).post("/api/v1/sweeps/", body, format="json").status_code == 201
    assert Sweep.objects.get().submission == SweepSubmission.ARRAY


def test_at_most_k_runs_are_let_out_and_each_end_lets_the_next_one_go(
    api_for, login, alice, cluster, gpu_template, sent
):
    sweep = gpu_sweep(api_for, alice, max_concurrent=2)
    sent.clear()
    release(sweep.pk)
    first, second, third = runs_of(sweep)
    assert [first.state, second.state, third.state] == [JobState.SUBMITTING, JobState.SUBMITTING, JobState.QUEUED]
    page = login(alice).get(sweep.get_absolute_url()).content.decode()
    assert '3 waiting</span> (<span id="progress-held">1 for its turn</span>)' in page and "run by run" in page
    assert sent == [(SUBMIT_JOB, (str(first.pk),)), (SUBMIT_JOB, (str(second.pk),))]
    assert Sweep.objects.get(pk=sweep.pk).state == SweepState.SUBMITTING
    sent.clear()
    release(sweep.pk)  # a second message lets nothing more out while two are out
    assert sent == [] and runs_of(sweep)[2].state == JobState.QUEUED

    # A run let out is submitted as a job is; one still queued is not, whoever sends its message.
    assert job_submission.submit(third.pk) is job_submission.Outcome.NOTHING
    for state in (JobState.PENDING, JobState.RUNNING, JobState.COMPLETED):
        with transaction.atomic():
            assert transition(first, state, scheduler_id="101")
    assert sent == [(SUBMIT_SWEEP, (str(sweep.pk),))]  # its end asks the sweep for the next run
    sent.clear()
    release(sweep.pk)
    assert runs_of(sweep)[2].state == JobState.SUBMITTING and sent == [(SUBMIT_JOB, (str(third.pk),))]
    assert Sweep.objects.get(pk=sweep.pk).state == SweepState.SUBMITTED  # every run let out
    events = third.events.values_list("message", flat=True)
    assert any(f"Let out by sweep {sweep.short_id} (2 of at most 2 at once)" in m for m in events)


def test_a_run_let_out_whose_message_died_is_sent_again_and_nothing_else(
    api_for, alice, cluster, gpu_template, sent, settings
):
    sweep = gpu_sweep(api_for, alice, max_concurrent=1)
    release(sweep.pk)
    first = runs_of(sweep)[0]
    sent.clear()
    settings.GPULAB_SUBMIT_STALE_AFTER = 0  # its message is as good as lost
    release(sweep.pk)
    assert sent == [(SUBMIT_JOB, (str(first.pk),))] and [r.state for r in runs_of(sweep)][1:] == ["queued"] * 2


def test_cancelling_the_sweep_ends_the_waiting_runs_and_cancels_those_let_out(
    api_for, alice, cluster, gpu_template, sent, django_capture_on_commit_callbacks
):
    sweep = gpu_sweep(api_for, alice, max_concurrent=1)
    release(sweep.pk)
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        cancellation.request_cancel(alice, Sweep.objects.get(pk=sweep.pk))
    first, *rest = runs_of(sweep)
    assert [r.state for r in rest] == [JobState.CANCELLED] * 2 and first.cancel_requested_at is not None
    # The sweep lets nothing more out, and the run on its way is cancelled as a job is (on the cluster, or under
    # its submit's lock).
    assert set(sent) == {(SUBMIT_SWEEP, (str(sweep.pk),)), (CANCEL_JOB, (str(first.pk), None, ""))}
    sent.clear()
    release(sweep.pk)
    assert sent == [] and Sweep.objects.get(pk=sweep.pk).state == SweepState.CANCELLED


def test_a_sweep_of_gpus_holds_its_largest_run_against_the_gpu_limit(
    api_for, alice, cluster, gpu_template, course, sent
):
    course.max_gpus = 4
    course.save()
    sweep = gpu_sweep(api_for, alice, gpus=(1, 2, 3))
    assert sweep.max_concurrent == 1  # any one run fits in 4 GPUs; two of the largest would not
    refused = api_for(alice).post(
        "/api/v1/sweeps/",
        {
            "template": "sleep-echo",
            "cluster": "local",
            "params": {"partition": "debug", "time_minutes": 6},
            "swept": {"gpus_per_node": [1, 4]},
            "mode": "grid",
        },
        format="json",
    )
    # Her first sweep's runs hold the limit now: none of the second's may start, and she is told why.
    assert refused.status_code == 403 and "GPU" in refused.json()["detail"]
