"""Comparing runs (experiments app): the tables' and series' figures, the refusals, access per run, CSV, the API.

The runs here are made through the real launch service and given stored series as the collector writes them
(telemetry SeriesChunk rows); tests/integration/test_compare_runs.py compares two real Tiny LM runs end to end.
"""

from __future__ import annotations

import csv
import html
import io
import statistics
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from experiments import curves, figures
from jobs.models import Job
from telemetry.models import JobSummary, SeriesChunk

pytestmark = pytest.mark.django_db


def ran(job, tok: list[float], loss: list[float], *, util=(), memory=(), state="completed", exit_code=0) -> Job:
    """The job as it ended, with the stored series the collector would have written: a point per 10 steps; GPU buckets
    every 10 s from its start, two GPUs each (util: their values per bucket)."""
    start = timezone.now() - timedelta(minutes=30)
    Job.objects.filter(pk=job.pk).update(
        state=state, started_at=start, finished_at=start + timedelta(minutes=5), exit_code=exit_code
    )
    steps = [10 * (i + 1) for i in range(len(tok))]
    t0 = int(start.timestamp() * 1000)
    series = {
        "loss": {"loss": {"name": "loss", "x": steps, "y": loss}},
        "tokens": {"tok": {"name": "tok/s", "x": steps, "y": tok}},
    }
    if util:
        times = [t0 + 10_000 * i for i in range(len(util))]
        series["gpu-util"] = {f"g{g}": {"name": f"GPU {g}", "x": times, "y": [u[g] for u in util]} for g in (0, 1)}
        series["gpu-memory"] = {f"g{g}": {"name": f"GPU {g}", "x": times, "y": [m[g] for m in memory]} for g in (0, 1)}
    SeriesChunk.objects.create(job=job, start=start, end=start + timedelta(minutes=5), series=series)
    return Job.objects.get(pk=job.pk)


def url(*jobs, **extra) -> str:
    query = ",".join(str(getattr(j, "pk", j)) for j in jobs)
    more = "".join(f"&{k}={v}" for k, v in extra.items())
    return f"{reverse('experiments:compare')}?jobs={query}{more}"


def api_url(*jobs) -> str:
    return f"{reverse('api:compare')}?jobs={','.join(str(getattr(j, 'pk', j)) for j in jobs)}"


@pytest.fixture
def two_runs(make_job, alice):
    slow = ran(make_job(alice, seconds=1), tok=[90, 100, 110, 400], loss=[3.0, 2.5, 2.2, 2.3])
    fast = ran(make_job(alice, seconds=2), tok=[170, 180, 200, 210, 900], loss=[3.0, 2.4, 2.0, 1.9, 1.95])
    return slow, fast


def test_the_speedup_is_the_ratio_of_median_tok_s_and_the_legend_names_what_differs(api_for, alice, two_runs):
    slow, fast = two_runs
    body = api_for(alice).get(api_url(slow, fast)).json()
    assert [run["name"] for run in body["runs"]] == ["seconds=1", "seconds=2"]
    assert [row["name"] for row in body["parameters"] if row["differs"]] == ["seconds"]
    baseline, other = (run["results"] for run in body["runs"])
    assert baseline["median_tok_s"] == statistics.median([90, 100, 110, 400]) == 105
    assert other["median_tok_s"] == 200
    assert baseline["speedup"] == 1.0 and other["speedup"] == pytest.approx(200 / 105)
    assert other["final_loss"] == 1.95 and other["lowest_loss"] == 1.9
    assert other["scaling_efficiency"] is None  # the same GPUs
    assert body["baseline"] == str(slow.pk) and body["note"] == "" and body["live"] is False
    against_fast = api_for(alice).get(api_url(slow, fast) + f"&baseline={fast.pk}").json()
    assert against_fast["runs"][0]["results"]["speedup"] == pytest.approx(105 / 200)


def test_the_page_shows_the_legend_the_differing_row_and_the_speedup(login, alice, two_runs):
    slow, fast = two_runs
    page = login(alice).get(url(slow, fast))
    text = page.content.decode()
    assert page.status_code == 200 and "vendor/plotly-basic.min.js" in text and "js/compare.js" in text
    assert text.count('class="differs" data-param=') == 1 and 'data-param="seconds"' in text
    assert "1.90\N{MULTIPLICATION SIGN}" in text and "1.00\N{MULTIPLICATION SIGN}" in text  # 200 / 105; the baseline 1
    assert '"name": "seconds=2"' in text  # the figures, built on the server
    legend = text.split('id="compare-legend"', 1)[1].split("</fieldset>", 1)[0]  # the page's one legend
    assert legend.count("data-run>") == 2 and "seconds=1</label>" in legend and "seconds=2</label>" in legend
    assert "plotly" not in login(alice).get(reverse("jobs:my_jobs")).content.decode()  # loaded on this page only


def test_gpu_figures_per_gpu_speed_and_scaling_efficiency(make_job, api_for, alice):
    one = ran(make_job(alice, gpus_per_node=1), tok=[100], loss=[2.0], util=[(50, 0)], memory=[(100, 0)])
    two = ran(
        make_job(alice, gpus_per_node=2), tok=[170], loss=[2.0], util=[(80, 60), (100, 40)], memory=[(10, 300)] * 2
    )
    body = api_for(alice).get(api_url(one, two)).json()
    results = body["runs"][1]["results"]
    assert results["tok_s_per_gpu"] == 85 and results["speedup"] == pytest.approx(1.7)
    assert results["scaling_efficiency"] == 85.0  # 1.7 times on twice the GPUs
    assert results["mean_gpu_util"] == 70.0 and results["peak_gpu_memory_mib"] == 300
    util = body["figures"]["gpu-util"]["data"][1]
    assert util["y"] == [70.0, 70.0] and util["x"] == [0.0, 0.167]  # minutes since its start: the mean of its GPUs
    assert body["figures"]["gpu-util"]["layout"]["hovermode"] == "x unified"


def test_a_stored_summary_gives_the_gpu_figures_of_an_ended_run(make_job, api_for, login, alice):
    a = ran(make_job(alice, seconds=1), tok=[100], loss=[2.0])
    b = ran(make_job(alice, seconds=2), tok=[100], loss=[2.0])
    JobSummary.objects.create(job=a, gpu_hours=0.25, mean_gpu_util=41.5, peak_gpu_memory_mib=2048, simulated_gpus=True)
    body = api_for(alice).get(api_url(a, b)).json()
    results = body["runs"][0]["results"]
    assert results["gpu_hours"] == 0.25 and results["mean_gpu_util"] == 41.5 and results["simulated_gpus"] is True
    assert "Simulated GPUs" in login(alice).get(url(a, b)).content.decode()


def test_long_series_are_downsampled_on_the_server_and_the_step_kept_last_wins():
    many = curves.Curve(list(range(20_000)), [float(i % 7) for i in range(20_000)])
    run = curves.RunCurves({"loss": many}, start_ms=0)
    trace = figures.figures(["a"], [run])["loss"]["data"][0]
    assert len(trace["x"]) <= figures.MAX_POINTS and max(trace["y"]) == 6.0 and min(trace["y"]) == 0.0
    resumed = curves.by_step([(10, 3.0), (20, 2.5), (20, 2.4), (30, 2.0)])
    assert resumed.x == [10, 20, 30] and resumed.y == [3.0, 2.4, 2.0]
    gpu = curves.RunCurves({"gpu-util": curves.Curve([0.0], [50.0]), "loss": curves.Curve([10], [2.0])}, start_ms=0)
    drawn = figures.figures(["a"], [gpu], [True])
    assert drawn["gpu-util"]["data"][0]["name"] == "a (simulated)" and drawn["loss"]["data"][0]["name"] == "a"
    assert figures.plotly_text("<b>Tiny</b> & co") == "&lt;b&gt;Tiny&lt;/b&gt; &amp; co"  # a name, never markup
    combined = curves.by_time([(1000, 10.0), (1000, 30.0), (11000, 5.0)], start_ms=1000, how="max")
    assert combined.x == [0.0, 10.0] and combined.y == [30.0, 5.0]


@pytest.mark.parametrize(
    ("picked", "said"),
    [
        ("not-an-id", "“not-an-id” is not a run's id"),
        (str(uuid.UUID(int=1)), "Pick two or more runs"),
        (",".join(str(uuid.UUID(int=i)) for i in range(1, 62)), "You picked 61 runs; a comparison shows at most 60"),
        ("", "Pick two or more runs"),
    ],
    ids=["not-an-id", "one", "sixty-one", "none"],  # the same names in every test process (pytest-xdist)
)
def test_bad_ids_too_few_and_too_many_are_refused_in_words(login, api_for, alice, picked, said):
    page = login(alice).get(f"{reverse('experiments:compare')}?jobs={picked}")
    assert page.status_code == 400 and said in html.unescape(page.content.decode())
    answer = api_for(alice).get(f"{reverse('api:compare')}?jobs={picked}")
    assert answer.status_code == 400 and said in answer.json()["jobs"][0]


def test_another_student_given_the_permalink_sees_none_of_the_runs(login, api_for, bob, carol, two_runs):
    slow, fast = two_runs
    for viewer in (bob, carol):
        page = login(viewer).get(url(slow, fast))
        text = page.content.decode()
        assert page.status_code == 404 and "None of these runs can be shown" in text
        assert slow.short_id not in text and "seconds=" not in text and "alice" not in text
        answer = api_for(viewer).get(api_url(slow, fast))
        assert answer.status_code == 404 and str(slow.pk) not in answer.content.decode()
        csv_answer = login(viewer).get(reverse("experiments:compare_csv", args=["results"]) + url(slow, fast)[9:])
        assert csv_answer.status_code == 404


def test_a_run_not_yours_or_deleted_is_left_out_with_a_note_never_named(login, make_job, alice, bob, two_runs):
    slow, fast = two_runs
    bobs = ran(make_job(bob, seconds=3, message="bobs-secret"), tok=[1], loss=[1.0])
    text = login(alice).get(url(slow, fast, bobs)).content.decode()
    assert "1 run is not shown: you may not see it or it was deleted." in text
    assert bobs.short_id not in text and "bobs-secret" not in text and "seconds=3" not in text
    gone = fast.pk
    Job.objects.filter(pk=gone).delete()
    text = login(alice).get(url(slow, gone, bobs)).content.decode()
    assert "2 runs are not shown: you may not see them or they were deleted." in text


def test_the_course_staff_compare_their_students_runs_named_by_student(api_for, make_job, instructor, ta, alice, bob):
    a = ran(make_job(alice, seconds=1), tok=[100], loss=[2.0])
    b = ran(make_job(bob, seconds=1), tok=[120], loss=[2.0])
    for staff in (instructor, ta):
        body = api_for(staff).get(api_url(a, b)).json()
        assert [run["name"] for run in body["runs"]] == ["alice", "bob"]
        assert [row["name"] for row in body["parameters"] if row["differs"]] == ["student"]


def test_the_csv_files_match_the_database_and_escape_formula_text(login, make_job, alice, two_runs):
    slow, fast = two_runs
    Job.objects.filter(pk=fast.pk).update(params={**fast.params, "message": "=HYPERLINK(1)"})
    client = login(alice)
    tail = url(slow, fast)[len(reverse("experiments:compare")) :]

    def rows(table):
        answer = client.get(reverse("experiments:compare_csv", args=[table]) + tail)
        assert answer["Content-Type"].startswith("text/csv")
        return list(csv.DictReader(io.StringIO(answer.content.decode())))

    results = {row["job"]: row for row in rows("results")}
    assert float(results[str(fast.pk)]["median_tok_s"]) == 200.0
    assert float(results[str(fast.pk)]["speedup_vs_baseline"]) == pytest.approx(200 / 105)
    assert results[str(slow.pk)]["baseline"] == "yes" and results[str(fast.pk)]["state"] == "completed"
    message = next(row for row in rows("parameters") if row["parameter"] == "message")
    assert "'=HYPERLINK(1)" in message.values()
    stored = SeriesChunk.objects.get(job=fast).series["tokens"]["tok"]
    tokens = [row for row in rows("series") if row["job"] == str(fast.pk) and row["chart"] == "tokens"]
    assert [(int(r["x"]), float(r["y"])) for r in tokens] == list(zip(stored["x"], stored["y"], strict=True))
    assert client.get(reverse("experiments:compare_csv", args=["nope"]) + tail).status_code == 404


def test_ticked_checkboxes_become_one_permalink(login, alice, two_runs):
    slow, fast = two_runs
    answer = login(alice).get(reverse("experiments:compare"), {"jobs": [str(slow.pk), str(fast.pk)]})
    assert answer.status_code == 302 and answer["Location"] == url(slow, fast).replace(",", "%2C")


def test_anonymous_visitors_are_sent_to_sign_in(client, two_runs):
    slow, fast = two_runs
    assert client.get(url(slow, fast)).status_code == 302
    assert client.get(api_url(slow, fast)).status_code in (401, 403)


def test_the_job_tables_and_the_job_page_offer_compare(login, make_job, alice, bob, instructor, two_runs):
    slow, fast = two_runs
    bobs = ran(make_job(bob, seconds=3), tok=[1], loss=[1.0])
    mine = login(alice).get(reverse("jobs:my_jobs")).content.decode()
    assert 'id="compare-runs"' in mine and f'name="jobs" value="{slow.pk}" form="compare-runs"' in mine
    course = login(instructor).get(reverse("courses:jobs", args=["hpc"])).content.decode()
    assert f'name="jobs" value="{bobs.pk}" form="compare-runs"' in course
    page = login(alice).get(reverse("jobs:detail", args=[slow.pk])).content.decode()
    assert "Compare with…" in page and f'value="{fast.pk}"' in page and "seconds=2" in page
    assert str(bobs.pk) not in page


def test_the_query_count_does_not_grow_with_the_runs(login, make_job, alice):
    runs = [ran(make_job(alice, seconds=i), tok=[100 + i], loss=[2.0]) for i in range(8)]
    client = login(alice)
    assert page_queries(client, runs[:2]) == page_queries(client, runs)


def page_queries(client, jobs) -> int:
    """The queries the comparison page of `jobs` makes."""
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url(*jobs)).status_code == 200
    return len(captured)


def test_the_api_schema_documents_compare_and_its_refusals(api_for, alice):
    schema = api_for(alice).get(reverse("api:schema"), {"format": "json"}).json()
    operation = schema["paths"]["/api/v1/compare/"]["get"]
    assert {"200", "400", "401", "403", "404"} <= set(operation["responses"])
    assert {p["name"] for p in operation["parameters"]} >= {"jobs", "baseline"}


def test_a_running_run_adds_the_trainer_points_not_stored_yet(api_for, make_job, alice, two_runs):
    from jobs import trainer_curve

    slow, _ = two_runs
    running = ran(make_job(alice, seconds=9), tok=[100, 110], loss=[3.0, 2.8], state="running")
    client = trainer_curve._sync_client()
    pipe = client.pipeline()
    trainer_curve.add_curve_points(
        pipe, running.pk, [{"step": 20, "loss": 2.8, "tok_s": 110.0}, {"step": 30, "loss": 2.6, "tok_s": 130.0}]
    )
    pipe.execute()
    try:
        body = api_for(alice).get(api_url(slow, running)).json()
    finally:
        client.delete(trainer_curve._curve_key(running.pk))
    loss = body["figures"]["loss"]["data"][1]
    assert loss["x"] == [10, 20, 30] and loss["y"] == [3.0, 2.8, 2.6]
    assert body["live"] is True and body["runs"][1]["results"]["median_tok_s"] == 110.0


def test_a_class_of_runs_shares_out_the_points_a_chart_draws():
    """A few runs keep every line's 1,000 points; fifty share 10,000 a chart (200 a line, a chart's width), which
    halves the page a class's comparison sends."""
    assert figures.points_per_line(2) == figures.points_per_line(10) == 1000
    assert figures.points_per_line(25) == 400 and figures.points_per_line(50) == figures.points_per_line(60) == 200
    steps = [float(step) for step in range(2000)]
    run = curves.RunCurves({"loss": curves.Curve(steps, steps)}, start_ms=0)
    drawn = figures.figures([f"run {i}" for i in range(50)], [run] * 50)
    assert all(len(trace["x"]) <= 200 for trace in drawn["loss"]["data"]) and len(drawn["loss"]["data"]) == 50
    assert [trace["uid"] for trace in drawn["loss"]["data"]] == [str(i) for i in range(50)]  # the legend's handle
    assert drawn["loss"]["layout"]["showlegend"] is False  # the page names the runs once, for every chart
