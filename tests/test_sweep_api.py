"""The sweeps API without a cluster run: what a launch makes and queues, its refusals before anything is submitted,
and who may see a sweep."""

import pytest

from core.choices import JobState
from jobs.models import Job
from sweeps.models import Sweep

pytestmark = pytest.mark.django_db

SWEEP = {
    "template": "sleep-echo",
    "cluster": "local",
    "params": {"partition": "debug", "time_minutes": 6, "gpus_per_node": 1},
    "swept": {"seconds": [1, 2], "exit_code": [0, 3]},
    "mode": "grid",
}


@pytest.fixture
def sent(monkeypatch):
    calls = []
    monkeypatch.setattr("core.enqueue.send", lambda name, args: calls.append((name, args)))
    return calls


def test_a_sweep_makes_its_runs_as_queued_jobs_and_queues_one_submission(
    api_for, alice, cluster, sleep_template, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api_for(alice).post("/api/v1/sweeps/", SWEEP, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    sweep = Sweep.objects.get()
    assert body["progress"] == {"total": 4, "done": 0, "running": 0, "waiting": 4, "completed": 0}
    assert [run["params"]["seconds"] for run in body["runs"]] == [1, 1, 2, 2]
    assert [run["params"]["exit_code"] for run in body["runs"]] == [0, 3, 0, 3]
    assert sent == [("sweeps.tasks.submit_sweep", (str(sweep.pk),))]  # one submission for the sweep, none per run
    assert Job.objects.filter(in_array=True, state=JobState.QUEUED).count() == 4
    lines = sweep.values_file.splitlines()
    assert [line.split("\t")[1:] for line in lines] == [["1", "0"], ["1", "3"], ["2", "0"], ["2", "3"]]
    assert "$GPULAB_P_seconds" in sweep.script and "sleep 1" not in sweep.script


def test_a_sweep_larger_than_the_budget_is_refused_saying_how_many_runs_fit(
    api_for, alice, cluster, sleep_template, course, sent
):
    course.student_gpu_hours = 0.25  # 15 GPU-minutes: two runs of 6 minutes on one GPU fit, not four
    course.save()
    response = api_for(alice).post("/api/v1/sweeps/", SWEEP, format="json")
    assert response.status_code == 403
    detail = response.json()["detail"]
    assert "0.4 GPU-hours for 4 runs" in detail and "2 run(s) fit" in detail, detail
    assert not Sweep.objects.exists() and not Job.objects.exists() and sent == []


def test_a_sweep_runs_at_once_what_the_concurrent_job_limit_leaves(
    api_for, alice, cluster, sleep_template, course, sent
):
    course.max_concurrent_jobs = 2
    course.save()
    response = api_for(alice).post("/api/v1/sweeps/", SWEEP, format="json")
    assert response.status_code == 201 and response.json()["max_concurrent"] == 2


def test_invalid_sweeps_are_400_naming_the_parameter(api_for, alice, cluster, sleep_template, sent):
    bad = {**SWEEP, "swept": {"message": ["a", "b"], "seconds": [1, 9999]}}
    response = api_for(alice).post("/api/v1/sweeps/", bad, format="json")
    assert response.status_code == 400
    errors = response.json()["swept"]
    assert "cannot be swept" in errors["message"][0] and "at most 600" in errors["seconds"][0]
    assert not Sweep.objects.exists()


def test_another_student_gets_404_for_a_sweep_and_its_cancel(api_for, alice, bob, carol, cluster, sleep_template, sent):
    sweep_id = api_for(alice).post("/api/v1/sweeps/", SWEEP, format="json").json()["id"]
    for other in (bob, carol):
        assert api_for(other).get(f"/api/v1/sweeps/{sweep_id}/").status_code == 404
        assert api_for(other).post(f"/api/v1/sweeps/{sweep_id}/cancel/").status_code == 404
        assert api_for(other).get("/api/v1/sweeps/").json()["results"] == []
    assert api_for(alice).get(f"/api/v1/sweeps/{sweep_id}/").status_code == 200


def test_instructor_sees_the_course_s_sweeps(api_for, alice, instructor, cluster, sleep_template, sent):
    sweep_id = api_for(alice).post("/api/v1/sweeps/", SWEEP, format="json").json()["id"]
    assert api_for(instructor).get(f"/api/v1/sweeps/{sweep_id}/").status_code == 200


def test_cancelling_a_sweep_before_submission_cancels_every_run(api_for, alice, cluster, sleep_template, sent):
    sweep_id = api_for(alice).post("/api/v1/sweeps/", SWEEP, format="json").json()["id"]
    response = api_for(alice).post(f"/api/v1/sweeps/{sweep_id}/cancel/")
    assert response.status_code == 202
    assert set(Job.objects.values_list("state", flat=True)) == {JobState.CANCELLED}
    assert api_for(alice).post(f"/api/v1/sweeps/{sweep_id}/cancel/").status_code == 409


def test_the_api_schema_documents_sweeps_and_their_refusals(api_for, alice):
    schema = api_for(alice).get("/api/v1/schema/?format=json").json()
    create = schema["paths"]["/api/v1/sweeps/"]["post"]
    assert {"201", "400", "403"} <= set(create["responses"])
    assert "how many runs fit" in create["description"]
    assert "404" in schema["paths"]["/api/v1/sweeps/{id}/"]["get"]["responses"]


def test_one_message_when_the_last_run_ends_and_none_per_run(api_for, alice, cluster, sleep_template, sent):
    from jobs.states import transition
    from notifications.models import Notification

    sweep_id = api_for(alice).post("/api/v1/sweeps/", SWEEP, format="json").json()["id"]
    runs = list(Job.objects.filter(sweep_run__sweep_id=sweep_id))
    for job in runs:
        assert transition(job, JobState.SUBMIT_FAILED, error="x", message="x")
        if job != runs[-1]:
            assert not Notification.objects.filter(user=alice).exists()
    keys = set(Notification.objects.filter(user=alice).values_list("key", flat=True))
    assert keys == {f"sweep_ended:sweep:{sweep_id}"}
    assert "4 runs, 4 submit failed" in Notification.objects.filter(user=alice).first().text


def test_sweep_page_shows_progress_and_runs_to_its_owner_and_404_to_another_student(
    api_for, login, alice, bob, cluster, sleep_template, sent
):
    sweep_id = api_for(alice).post("/api/v1/sweeps/", SWEEP, format="json").json()["id"]
    page = login(alice).get(f"/sweeps/{sweep_id}/")
    body = page.content.decode()
    assert page.status_code == 200
    assert "0 of 4 done" in body and "4 waiting" in body and 'id="cancel-sweep"' in body
    assert body.count('data-task="') == 4
    assert login(bob).get(f"/sweeps/{sweep_id}/").status_code == 404
    assert login(bob).post(f"/sweeps/{sweep_id}/cancel/").status_code == 404
    run = Job.objects.filter(sweep_run__sweep_id=sweep_id, sweep_run__index=2).get()
    assert f'href="/sweeps/{sweep_id}/"' in login(alice).get(run.get_absolute_url()).content.decode()


def test_the_launch_form_switches_to_a_sweep_and_checks_it_before_launching(
    login, alice, cluster, sleep_template, course, sent
):
    single = login(alice).get(f"/courses/{course.slug}/launch/{sleep_template.slug}/").content.decode()
    assert f'href="/courses/{course.slug}/sweep/{sleep_template.slug}/"' in single
    url = f"/courses/{course.slug}/sweep/{sleep_template.slug}/"
    form = {
        "cluster": cluster.pk,
        "param_partition": "debug",
        "param_time_minutes": 6,
        "param_gpus_per_node": 1,
        "param_seconds": 1,
        "param_exit_code": 0,
        "param_message": "hi",
        "sweep_seconds": "1, 2, 3",
        "sweep_exit_code": "",
        "mode": "grid",
    }
    checked = login(alice).post(url, {**form, "check": "1"})
    body = checked.content.decode()
    assert checked.status_code == 200 and "3 runs" in body and "0.3 GPU-hours" in body and "from the time limit" in body
    assert not Sweep.objects.exists()
    course.student_gpu_hours = 0.25
    course.save()
    refused = login(alice).post(url, form)
    assert refused.status_code == 400 and "2 run(s) fit" in refused.content.decode()
    course.student_gpu_hours = None
    course.save()
    launched = login(alice).post(url, form)
    sweep = Sweep.objects.get()
    assert (
        launched.status_code == 302
        and launched.url == sweep.get_absolute_url()
        and sweep.swept == {"seconds": [1, 2, 3]}
    )


def test_the_estimate_comes_from_earlier_runs_of_the_template_when_there_are_some(
    alice, course, sleep_template, make_job
):
    from datetime import timedelta

    from django.utils import timezone

    from sweeps.fit import fit

    end = timezone.now()
    for minutes in (10, 20, 60):
        job = make_job(alice, gpus_per_node=1)
        Job.objects.filter(pk=job.pk).update(
            state=JobState.COMPLETED, started_at=end - timedelta(minutes=minutes), finished_at=end
        )
    estimate = fit(alice, course, sleep_template, shapes=[(2, 30)] * 4)
    assert estimate.from_runs == 3 and estimate.hours_per_run == pytest.approx(2 * 20 / 60)
    assert "median of 3 earlier run(s)" in estimate.summary()
    capped = fit(alice, course, sleep_template, shapes=[(1, 15)] * 4)  # never above the run's time limit
    assert capped.hours_per_run == pytest.approx(15 / 60)
    # A sweep of GPUs: the hours of each run by its own GPUs, and runs at once counted as the largest run
    mixed = fit(alice, course, sleep_template, shapes=[(1, 30), (2, 30), (4, 30)])
    assert mixed.total_hours == pytest.approx((1 + 2 + 4) * 20 / 60) and mixed.gpus_per_run == 4


def test_the_sweep_list_costs_the_same_queries_for_one_sweep_as_for_three(
    api_for, alice, cluster, sleep_template, sent
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries() -> int:
        with CaptureQueriesContext(connection) as seen:
            assert api_for(alice).get("/api/v1/sweeps/").status_code == 200
        return len(seen)

    api_for(alice).post("/api/v1/sweeps/", SWEEP, format="json")
    one = queries()
    for _ in range(2):
        api_for(alice).post("/api/v1/sweeps/", SWEEP, format="json")
    assert queries() == one


def test_the_sweep_page_says_how_its_ended_runs_ended_not_only_that_they_are_done(
    api_for, login, alice, cluster, sleep_template, sent
):
    sweep_id = api_for(alice).post("/api/v1/sweeps/", SWEEP, format="json").json()["id"]
    runs = Job.objects.filter(sweep_run__sweep_id=sweep_id).order_by("sweep_run__index")
    for job, state in zip(
        runs, [JobState.COMPLETED, JobState.CANCELLED, JobState.CANCELLED, JobState.TIMED_OUT], strict=True
    ):
        Job.objects.filter(pk=job.pk).update(state=state)
    body = login(alice).get(f"/sweeps/{sweep_id}/").content.decode()
    assert "4 of 4 done" in body and "(1 completed, 2 cancelled, 1 failed or timed out)" in body
    Job.objects.filter(sweep_run__sweep_id=sweep_id).update(state=JobState.COMPLETED)
    assert 'id="progress-ended"' not in login(alice).get(f"/sweeps/{sweep_id}/").content.decode()
