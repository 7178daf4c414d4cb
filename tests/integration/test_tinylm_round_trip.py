"""The Tiny LM round trip on the local SLURM (sshd, slurmd, the lab's CPU PyTorch from scripts/lab_venv.sh), with jobs
and files as the student's own user (labbob, through the sudo rule) under a shared lab directory the service account
staged the trainer into: the student uploads a text file on the Files page in Chromium, launches the built-in Tiny LM
on it (its Training text parameter names the file), and downloads model.pt from the job's run directory through the
portal; the download has the size and sha256 of the cluster's copy. The trainer's start line counts the steps one
epoch of THAT file gives, which the bundled text would not."""

from __future__ import annotations

import hashlib
import os
import pwd
import random
import shutil
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from playwright.sync_api import expect

from clusters.choices import RunAs
from clusters.identity import set_cluster_username
from clusters.kinds import get_backend
from jobs.builtin import load_builtin_templates
from jobs.models import Job

from .jobs_api import read_whole_log
from .test_browser import log_in
from .test_job_page_browser import SHOTS, _page

LAB_DIR = Path("/srv/gpulab-tinylm-test")  # shared: the service account's staged trainer, the students' runs
LAB_VENV = os.environ.get("GPULAB_LAB_VENV", "/opt/gpulab-lab-venv")
SEQ_LEN, BATCH = 64, 8
STUDENT = os.environ.get("GPULAB_STUDENT_USERS", "labalice labbob").split()[1]


def corpus(size: int) -> bytes:
    words = ["gpu", "lab", "tensor", "epoch", "loss", "batch", "kernel", "node", "step", "token"]
    rng = random.Random(7)
    text = " ".join(rng.choice(words) for _ in range(size // 4)).encode()
    return text[:size]


@pytest.fixture
def tinylm_cluster(cluster, course, bob, services):
    for folder, mode in ((LAB_DIR, 0o755), (LAB_DIR / "jobs", 0o1777), (LAB_DIR / "students", 0o1777)):
        folder.mkdir(exist_ok=True)
        folder.chmod(mode)
    shutil.chown(LAB_DIR, services["GPULAB_SERVICE_USER"])
    cluster.lab_dir, cluster.run_as = str(LAB_DIR), RunAs.SUDO
    cluster.preamble = f"export PYTHON={LAB_VENV}/bin/python"
    cluster.save()
    get_backend(cluster).stage_lab_files(django_settings.GPULAB_LAB_FILES_DIR)  # trainer/, as the service account
    load_builtin_templates([course])
    set_cluster_username(bob, STUDENT)
    yield cluster  # its jobs are cancelled by their scheduler ids (conftest's _quiesce), never by `--user`
    shutil.rmtree(LAB_DIR, ignore_errors=True)


@pytest.mark.browser
@pytest.mark.timeout(420)
def test_upload_a_data_file_train_tiny_lm_on_it_and_download_model_pt_with_the_cluster_s_checksum(
    worker,
    chromium,
    live_server,
    tinylm_cluster,
    bob,
    api_for,
    job_state,
):
    data = corpus(40_000)
    page = _page(chromium, "laptop")
    log_in(page, live_server, "bob")
    page.goto(f"{live_server.url}/files/{tinylm_cluster.pk}/")
    page.set_input_files("#upload-input", files=[{"name": "corpus.txt", "mimeType": "text/plain", "buffer": data}])
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.locator("table.files")).to_contain_text("corpus.txt", timeout=30_000)

    params = {
        "partition": "debug",
        "cpus_per_task": 1,
        "time_minutes": 5,
        "model": "tiny",
        "max_steps": 100000,
        "batch_size": BATCH,
        "seq_len": SEQ_LEN,
        "precision": "fp32",
        "num_workers": 0,
        "data": "corpus.txt",
    }
    response = api_for(bob).post(
        "/api/v1/jobs/", {"template": "tiny-lm-single", "cluster": "local", "params": params}, format="json"
    )
    assert response.status_code == 201, response.content
    job = job_state(Job.objects.get(pk=response.json()["id"]), "completed", "failed", "cancelled", timeout=300)
    log = read_whole_log(api_for, bob, job)
    assert job.state == "completed", log
    steps = ((int(len(data) * 0.95) - 1) // SEQ_LEN) // BATCH  # one epoch of the uploaded text (the bundled: 100000)
    assert f" steps={steps} " in log, log

    assert (LAB_DIR / "students" / STUDENT / "corpus.txt").read_bytes() == data  # uploaded as labbob, beside no one
    on_cluster = LAB_DIR / "jobs" / str(job.pk) / "runs" / job.scheduler_id / "model.pt"
    assert pwd.getpwuid(on_cluster.stat().st_uid).pw_name == STUDENT
    page.goto(f"{live_server.url}/jobs/{job.pk}/files/?path=runs/{job.scheduler_id}")
    row = page.locator("table.files tr", has_text="model.pt")
    with page.expect_download() as download:
        row.get_by_role("link", name="Download").click()
    got = Path(download.value.path()).read_bytes()
    assert download.value.suggested_filename == "model.pt"
    assert len(got) == on_cluster.stat().st_size > 0
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(on_cluster.read_bytes()).hexdigest()
    page.screenshot(path=str(SHOTS / "tinylm-run-directory-laptop.png"), full_page=True)
