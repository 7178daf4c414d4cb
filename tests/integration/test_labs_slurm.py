"""A lab worked through on the local SLURM cluster by two students: a step's log check turns done when its line
appears in the run's log and not before; a failed run shows the step's quick fix; a run launched from the catalog
counts the same; the instructor's grid, open on its socket, gets each student's row as their runs move."""

from __future__ import annotations

from django.urls import reverse

from jobs.models import Job
from labs.builtin import load_lab
from labs.models import Step
from tests.integration.jobs_api import launch
from tests.integration.ws import Socket

STEP_LINE = "lab-word-42"


def _lab(course):
    step = {
        "title": "Say the word",
        "instructions": "Launch it and wait for the word in the log.",
        "template": "sleep-echo",
        "preset": {"message": STEP_LINE, "seconds": 12, "partition": "debug", "time_minutes": 2},
        "fixed": ["message"],
        "check": {"kind": "log", "pattern": STEP_LINE},
        "quick_fixes": [{"states": ["failed"], "text": "It exited with an error: set Exit code to 0 and try again."}],
    }
    return load_lab(course, {"slug": "warm-up", "title": "Warm-up", "sections": [
        {"title": "Start", "minutes": 10, "steps": [step]},
    ]})  # fmt: skip


def _state(client, lab) -> str:
    page = client.get(reverse("labs:lab", args=[lab.course.slug, lab.slug])).content.decode()
    return page.split('data-state="', 1)[1].split('"', 1)[0], page


def test_a_log_step_turns_done_when_its_line_appears_and_a_failed_run_shows_the_quick_fix(
    worker, web, login, api_for, alice, bob, instructor, cluster, sleep_template, course, job_state
):
    lab = _lab(course)
    step = Step.objects.get(section__lab=lab)
    client = login(alice)
    grid = Socket(web, instructor, f"/ws/courses/{course.slug}/labs/{lab.slug}/")
    # Bob does the step from the catalog, with the step's word, beside alice.
    bobs = launch(api_for, bob, message=STEP_LINE, seconds=1)

    # From the catalog (the API), with the step's word but an error: it counts for the step, and it failed.
    failed = job_state(launch(api_for, alice, message=STEP_LINE, seconds=0, exit_code=3), "failed")
    state, page = _state(client, lab)
    assert state == "failed" and "Quick fix: It exited with an error" in page and failed.short_id in page

    # From the lab page: its link opens the launch form with the step's values; the word comes after 12 s of sleep.
    form_url = client.get(reverse("labs:launch_step", args=[course.slug, lab.slug, step.pk])).url
    data = {"cluster": cluster.pk, "param_partition": "debug", "param_time_minutes": 2, "param_gpus_per_node": 0}
    data |= {"param_seconds": 12, "param_exit_code": 0, "param_message": "ignored: the step fixes it"}
    assert client.post(form_url, data).status_code == 302
    job = Job.objects.exclude(pk__in=[failed.pk, bobs.pk]).get()
    assert job.params["message"] == STEP_LINE  # the fixed value, whatever was posted
    job_state(job, "running")
    assert _state(client, lab)[0] == "running"  # started, and the word is not in its log yet
    job_state(job, "completed")
    state, page = _state(client, lab)
    assert state == "done" and "Done ✓" in page and "1 of 1" in page and bobs.short_id not in page

    job_state(bobs, "completed")
    with grid:  # the rows the worker sent as the runs moved, without a reload
        done = grid.wait(lambda m: m.get("student") == bob.pk and m["cells"][0]["state"] == "done", what="bob done")
        assert done["cells"][0]["job"] == f"/jobs/{bobs.pk}/"
        grid.wait(lambda m: m.get("student") == alice.pk and m["done"] == 1, what="alice's row, done")
    mine = api_for(bob).get(f"/api/v1/courses/{course.slug}/labs/{lab.slug}/progress/").json()
    assert mine[0]["state"] == "done" and mine[0]["evidence"] == str(bobs.pk)
