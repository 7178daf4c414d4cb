"""Two real Tiny LM runs on the local SLURM that differ in precision, compared: the legend and the differing-parameters
table name them by precision, the speed-up is the ratio of the medians of the tok/s the collector stored, the results
CSV matches the database, and another student given the permalink sees nothing of them. Chromium opens the page at a
phone's width: the legend names the runs and nothing scrolls sideways.

The runs are short (30 steps of the tiny model on the bundled text, on one CPU each): this checks the comparison of
what the portal stored, not which precision is faster on a CPU (bf16 is emulated there).
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import statistics
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from playwright.sync_api import expect

from clusters.choices import RunAs
from clusters.identity import set_cluster_username
from clusters.kinds import get_backend
from jobs.builtin import load_builtin_templates
from jobs.models import Job
from telemetry.models import SeriesChunk

from .conftest import WORKER_SUFFIX, wait_for
from .test_browser import log_in
from .test_job_page_browser import SHOTS, _no_horizontal_scroll, _page

LAB_DIR = Path(f"/srv/gpulab-compare-test{WORKER_SUFFIX}")
LAB_VENV = os.environ.get("GPULAB_LAB_VENV", "/opt/gpulab-lab-venv")
STUDENT = os.environ.get("GPULAB_STUDENT_USERS", "labalice labbob").split()[1]
PARAMS = {
    "partition": "debug",
    "cpus_per_task": 1,
    "time_minutes": 5,
    "model": "tiny",
    "max_steps": 30,
    "batch_size": 8,
    "seq_len": 64,
    "num_workers": 0,
}


@pytest.fixture
def compare_cluster(cluster, course, bob, services):
    for folder, mode in ((LAB_DIR, 0o755), (LAB_DIR / "jobs", 0o1777), (LAB_DIR / "students", 0o1777)):
        folder.mkdir(exist_ok=True)
        folder.chmod(mode)
    shutil.chown(LAB_DIR, services["GPULAB_SERVICE_USER"])
    cluster.lab_dir, cluster.run_as = str(LAB_DIR), RunAs.SUDO
    cluster.preamble = f"export PYTHON={LAB_VENV}/bin/python"
    cluster.save()
    get_backend(cluster).stage_lab_files(django_settings.GPULAB_LAB_FILES_DIR)
    load_builtin_templates([course])
    set_cluster_username(bob, STUDENT)
    yield cluster
    shutil.rmtree(LAB_DIR, ignore_errors=True)


def _tokens(job: Job) -> list[float]:
    """The tok/s points the collector stored for the job, by step (the last value of a step)."""
    by_step: dict[int, float] = {}
    for chunk in SeriesChunk.objects.filter(job=job).order_by("start"):
        for trace in chunk.series.get("tokens", {}).values():
            by_step.update(zip(trace["x"], trace["y"], strict=True))
    return [by_step[step] for step in sorted(by_step) if by_step[step] is not None]


@pytest.mark.browser
@pytest.mark.timeout(420)
def test_two_tiny_lm_runs_differing_in_precision_compare_by_precision(
    worker, collector, chromium, live_server, compare_cluster, bob, alice, api_for, job_state
):
    runs = []
    for precision in ("fp32", "bf16"):
        answer = api_for(bob).post(
            "/api/v1/jobs/",
            {"template": "tiny-lm-single", "cluster": "local", "params": {**PARAMS, "precision": precision}},
            format="json",
        )
        assert answer.status_code == 201, answer.content
        runs.append(Job.objects.get(pk=answer.json()["id"]))
    fp32, bf16 = (job_state(job, "completed", "failed", "cancelled", timeout=300) for job in runs)
    assert fp32.state == bf16.state == "completed"
    log = api_for(bob).get(f"/api/v1/jobs/{fp32.pk}/log/?offset=0").json()["data"]
    assert "device=cpu" in log and "note: this job was given GPUs (SLURM_GPUS_ON_NODE=1)" in log  # the stand-in GPUs
    collector.stop()  # its closing flush stores what it still held of the runs' series
    wait_for(lambda: _tokens(fp32) and _tokens(bf16), timeout=30, what="both runs' stored tok/s")

    ids = f"{fp32.pk},{bf16.pk}"
    body = api_for(bob).get(f"/api/v1/compare/?jobs={ids}").json()
    assert [run["name"] for run in body["runs"]] == ["precision=fp32", "precision=bf16"]
    assert [row["name"] for row in body["parameters"] if row["differs"]] == ["precision"]
    medians = [statistics.median(_tokens(job)) for job in (fp32, bf16)]
    results = [run["results"] for run in body["runs"]]
    assert [r["median_tok_s"] for r in results] == [round(m, 1) for m in medians]
    assert results[1]["speedup"] == pytest.approx(round(medians[1], 1) / round(medians[0], 1))

    client = api_for(bob)
    client.force_login(bob)
    table = client.get(f"/compare/results.csv?jobs={ids}").content.decode()
    rows = {row["job"]: row for row in csv.DictReader(io.StringIO(table))}
    for job, median in zip((fp32, bf16), medians, strict=True):
        job.refresh_from_db()
        assert rows[str(job.pk)]["state"] == job.state and rows[str(job.pk)]["exit_code"] == str(job.exit_code)
        assert float(rows[str(job.pk)]["median_tok_s"]) == round(median, 1)
        assert rows[str(job.pk)]["gpus"] == str(job.gpus)

    other = api_for(alice).get(f"/api/v1/compare/?jobs={ids}")  # the same course, another student
    assert other.status_code == 404 and str(fp32.pk) not in other.content.decode()

    page = _page(chromium, "phone")
    log_in(page, live_server, "bob")
    page.goto(f"{live_server.url}/compare/?jobs={ids}")
    legend = page.locator("#compare-legend label")
    expect(legend).to_have_text(["precision=fp32", "precision=bf16"], timeout=15_000)
    expect(page.locator("#chart-loss .scatterlayer .trace")).to_have_count(2)
    expect(page.locator("#compare-parameters tr.differs th")).to_have_text(["Precision"])
    speedup = f"{results[1]['speedup']:.2f}\N{MULTIPLICATION SIGN}"
    expect(page.locator(f'#compare-results tr[data-run="{bf16.pk}"] td.speedup')).to_contain_text(speedup)
    _no_horizontal_scroll(page)
    page.screenshot(path=str(SHOTS / "compare-phone.png"), full_page=True)
    stranger = _page(chromium, "phone")
    log_in(stranger, live_server, "alice")
    stranger.goto(f"{live_server.url}/compare/?jobs={ids}")
    expect(stranger.locator("#compare-refusal")).to_contain_text("None of these runs can be shown")
    assert "precision" not in stranger.content()
