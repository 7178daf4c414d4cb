"""A sweep on Kubernetes, which has no job arrays: its runs go one by one as Jobs of their own, each with its own
values in its manifest, at most K at once, the next one created when one ends; cancelling the sweep deletes the Job
that runs and the rest never reach the cluster. The tests play the Job controller against the emulated API server."""

from __future__ import annotations

from jobs.models import Job
from notifications.models import Notification
from sweeps.models import Sweep

from .conftest import wait_for
from .test_k8s_jobs import NS, owned

JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"


def sweep_batch_sizes(api_for, user, sizes: list[int]) -> Sweep:
    body = {
        "template": "k8s-tinylm-train",
        "cluster": "k8s",
        "params": {"gpus": 1, "max_steps": 50, "image": "gpulab/tinylm-trainer:0.1.0-cpu"},
        "swept": {"batch_size": sizes},
        "mode": "grid",
        "max_concurrent": 1,
    }
    response = api_for(user).post("/api/v1/sweeps/", body, format="json")
    assert response.status_code == 201, response.json()
    sweep = Sweep.objects.get(pk=response.json()["id"])
    assert sweep.submission == "runs" and sweep.max_concurrent == 1
    return sweep


def runs_of(sweep: Sweep) -> list[Job]:
    return list(Job.objects.filter(sweep_run__sweep=sweep).order_by("sweep_run__index"))


def batch_size_of(batch: dict) -> str:
    args = batch["spec"]["template"]["spec"]["containers"][0]["args"]
    return args[args.index("--batch_size") + 1]


def complete(kube, batch: dict) -> None:
    kube.set_status(f"{JOBS}/{batch['metadata']['name']}", {"conditions": [{"type": "Complete", "status": "True"}]})


def test_a_sweep_runs_as_one_job_after_another_each_with_its_own_values(
    worker, api_for, alice, k8s_cluster, k8s_templates, kube, job_state
):
    sweep = sweep_batch_sizes(api_for, alice, [16, 32])
    first, second = runs_of(sweep)
    job_state(first, "pending")
    (batch,) = owned(kube, JOBS, first)
    assert batch_size_of(batch) == "16"
    assert Job.objects.get(pk=second.pk).state == "queued" and owned(kube, JOBS, second) == []  # one at a time

    complete(kube, batch)
    job_state(first, "completed")
    job_state(second, "pending")
    (batch,) = owned(kube, JOBS, second)
    assert batch_size_of(batch) == "32"
    complete(kube, batch)
    job_state(second, "completed")
    ended = wait_for(lambda: Notification.objects.filter(user=alice, event="sweep_ended").first(), what="the message")
    assert "2 runs, 2 completed" in ended.text
    assert Sweep.objects.get(pk=sweep.pk).state == "submitted"


def test_cancelling_the_sweep_deletes_the_running_job_and_the_rest_never_reach_the_cluster(
    worker, api_for, alice, k8s_cluster, k8s_templates, kube, job_state
):
    sweep = sweep_batch_sizes(api_for, alice, [16, 32, 64])
    first, *rest = runs_of(sweep)
    job_state(first, "pending")
    (batch,) = owned(kube, JOBS, first)
    kube.start_pod(batch, "sweep-run-0", phase="Running")
    job_state(first, "running")
    assert api_for(alice).post(f"/api/v1/sweeps/{sweep.pk}/cancel/").status_code == 202
    wait_for(
        lambda: set(Job.objects.filter(sweep_run__sweep=sweep).values_list("state", flat=True)) == {"cancelled"},
        what="every run cancelled",
    )
    wait_for(lambda: owned(kube, JOBS, first) == [], what="the running run's Job deleted")
    assert all(owned(kube, JOBS, run) == [] and Job.objects.get(pk=run.pk).scheduler_id == "" for run in rest)
