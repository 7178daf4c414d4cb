"""The comparison's step-time chart: seconds per training step by step, derived from the tok/s the collector stored
and the run's tokens per step (experiments/step_time.py), with the other charts' legends, hover, smoothing and CSV."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from experiments import step_time
from jobs.models import Job
from telemetry.models import SeriesChunk
from tests.test_compare import api_url, ran, url

pytestmark = pytest.mark.django_db


def trainer_run(job, tok: list[float], *, batch_size=8, seq_len=64, gpus=None) -> Job:
    """A finished run with stored tok/s and loss points and the trainer's batch and sequence length."""
    params = {**job.params, "batch_size": batch_size, "seq_len": seq_len}
    Job.objects.filter(pk=job.pk).update(params=params, **({} if gpus is None else {"gpus": gpus}))
    return ran(Job.objects.get(pk=job.pk), tok=tok, loss=[3.0 - i / 10 for i in range(len(tok))])


def stored_tokens(job: Job) -> tuple[list, list]:
    trace = SeriesChunk.objects.get(job=job).series["tokens"]["tok"]
    return trace["x"], trace["y"]


def test_step_time_is_the_runs_tokens_per_step_over_its_stored_tok_s(make_job, api_for, alice):
    fp32 = trainer_run(make_job(alice, seconds=1), tok=[1000.0, 1024.0, 980.5], gpus=1)
    bf16 = trainer_run(make_job(alice, seconds=2), tok=[2048.0, 2000.0, 1900.0], gpus=2, batch_size=16)
    body = api_for(alice).get(api_url(fp32, bf16)).json()
    figure = body["figures"]["step-time"]
    for trace, job, per_step in zip(figure["data"], (fp32, bf16), (8 * 64 * 1, 16 * 64 * 2), strict=True):
        steps, tok_s = stored_tokens(job)
        assert trace["x"] == steps
        assert trace["y"] == [round(per_step / t, 6) for t in tok_s]
    assert figure["data"][0]["y"][1] == 0.5  # 512 tokens a step at 1,024 tok/s: half a second
    assert [t["name"] for t in figure["data"]] == [t["name"] for t in body["figures"]["loss"]["data"]]
    assert [t["line"]["color"] for t in figure["data"]] == [t["line"]["color"] for t in body["figures"]["loss"]["data"]]
    assert figure["layout"]["hovermode"] == "x unified" and figure["layout"]["xaxis"]["title"]["text"] == "step"
    assert list(body["figures"]) == ["loss", "tokens", "step-time"]  # drawn after throughput, before the GPU charts


def test_a_run_without_batch_size_or_seq_len_gets_no_step_time_line_rather_than_a_guess(make_job, api_for, alice):
    known = trainer_run(make_job(alice, seconds=1), tok=[1000.0])
    unknown = trainer_run(make_job(alice, seconds=2), tok=[1000.0], seq_len=None)
    hostile = trainer_run(make_job(alice, seconds=3), tok=[1000.0], batch_size="=1+1")
    body = api_for(alice).get(api_url(known, unknown, hostile)).json()
    assert [t["name"] for t in body["figures"]["step-time"]["data"]] == [body["runs"][0]["name"]]
    alone = api_for(alice).get(api_url(unknown, hostile)).json()
    assert "step-time" not in alone["figures"] and "tokens" in alone["figures"]
    assert step_time.tokens_per_step(Job(params={"batch_size": True, "seq_len": 64}, gpus=1)) is None
    assert step_time.tokens_per_step(Job(params={"batch_size": "32", "seq_len": 128}, gpus=0)) == 4096  # one CPU


def test_the_page_draws_a_step_time_chart_that_smooths_like_loss(login, make_job, alice):
    a = trainer_run(make_job(alice, seconds=1), tok=[1000.0, 1100.0])
    b = trainer_run(make_job(alice, seconds=2), tok=[900.0, 950.0])
    text = login(alice).get(url(a, b)).content.decode()
    assert 'data-chart="step-time"' in text and '"text": "Step time"' in text
    assert "loss, tok/s and step time" in text  # the smoothing control says it smooths this chart too
    smoothed = (Path(settings.BASE_DIR) / "static/js/compare.js").read_text().split("const SMOOTHED", 1)[1]
    assert '"step-time"' in smoothed.split(";", 1)[0]


def test_the_series_csv_holds_every_derived_step_time_point(login, make_job, alice):
    a = trainer_run(make_job(alice, seconds=1), tok=[1000.0, 800.0, 1280.0])
    b = trainer_run(make_job(alice, seconds=2), tok=[512.0])
    answer = login(alice).get(reverse("experiments:compare_csv", args=["series"]) + url(a, b)[len("/compare/") :])
    rows = [row for row in csv.DictReader(io.StringIO(answer.content.decode())) if row["chart"] == "step-time"]
    steps, tok_s = stored_tokens(a)
    mine = [(int(r["x"]), float(r["y"])) for r in rows if r["job"] == str(a.pk)]
    assert mine == [(s, round(512 / t, 6)) for s, t in zip(steps, tok_s, strict=True)]
    assert {r["x_unit"] for r in rows} == {"step"} and [r["y"] for r in rows if r["job"] == str(b.pk)] == ["1.0"]
