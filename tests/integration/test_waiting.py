"""Why am I waiting, on the real stack: the local SLURM's GPUs held by a long job, a second job launched behind it
through the API, the worker's poll reading `squeue --start` and `sprio`, the job page in Chromium (laptop and phone)
and the API showing its place, SLURM's estimated start and what would start it sooner; and the number of scheduler
calls one poll cycle makes with many pending jobs.

Screenshots go to $GPULAB_SCREENSHOT_DIR (default /tmp/gpulab-shots).
"""

import subprocess
import uuid
from datetime import UTC, datetime

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from clusters.backends import ssh
from clusters.kinds import get_backend
from clusters.models import Cluster
from core.choices import JobState
from jobs import polling
from jobs.models import Job, JobWait
from tests.integration.jobs_api import launch

from . import test_job_page_browser as job_page_browser
from .conftest import slurm, wait_for
from .test_browser import log_in
from .test_job_page_browser import SHOTS, WIDTHS, _no_horizontal_scroll, _page

chromium = job_page_browser.chromium  # the fixture, shared


def _learn_partitions(cluster) -> None:
    """What an admin's Test connection stores: each partition's GPUs per node, from sinfo."""
    limits = get_backend(cluster).partition_limits()
    Cluster.objects.filter(pk=cluster.pk).update(partition_limits={n: p.as_dict() for n, p in limits.items()})


def _slurm_estimate(scheduler_id: str) -> datetime | None:
    text = slurm("squeue", "--start", "--noheader", f"--jobs={scheduler_id}", "--format=%S").strip()
    try:
        return timezone.make_aware(datetime.fromisoformat(text))
    except ValueError:
        return None


@pytest.fixture
def waiting_job(worker, api_for, alice, bob, cluster, sleep_template, job_state):
    """Two of the node's four GPUs held for ten minutes by Bob, and a 4-GPU job of Alice's waiting behind them."""
    _learn_partitions(cluster)
    holder = job_state(launch(api_for, bob, seconds=600, time_minutes=10, gpus_per_node=2), "running")
    waiting = job_state(launch(api_for, alice, seconds=5, time_minutes=5, gpus_per_node=4), "pending")

    def estimated():
        wait = JobWait.objects.filter(job=waiting).first()
        return wait if wait and wait.estimated_start and wait.advice else None

    wait_for(estimated, timeout=60, what="the poll to store an estimated start")
    return holder, waiting


@pytest.mark.timeout(300)
def test_api_gives_position_slurms_estimated_start_and_the_gpus_that_would_start_it_now(waiting_job, api_for, alice):
    holder, waiting = waiting_job
    body = api_for(alice).get(f"/api/v1/jobs/{waiting.pk}/").json()
    assert body["state"] == "pending"
    wait = body["wait"]
    assert wait["position"] >= 1 and wait["pending_in_partition"] >= wait["position"]
    assert wait["partition"] == "debug" and wait["age_seconds"] < 30
    estimate = datetime.fromisoformat(wait["estimated_start"].replace("Z", "+00:00"))
    asked = _slurm_estimate(waiting.scheduler_id)
    assert asked is not None and abs((estimate - asked).total_seconds()) <= 60  # SLURM's own figure, one cycle old
    holder_ends = Job.objects.get(pk=holder.pk).started_at.astimezone(UTC).timestamp() + 10 * 60
    assert abs(estimate.timestamp() - holder_ends) <= 90  # when the 2-GPU job reaches its limit
    assert wait["factors"] and "Fair share" in wait["factors"]  # sprio, with multifactor priority
    if wait["position"] == 1:  # nobody else's job waits ahead of it on the shared cluster: 2 GPUs are free now
        assert wait["suggested"] == {"gpus_per_node": 2}
        assert "with 2 GPUs instead of 4 SLURM could start it now" in wait["advice"][0]


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_student_sees_why_the_job_waits_on_a_laptop_and_a_phone(chromium, live_server, waiting_job):
    _, waiting = waiting_job
    for size in WIDTHS:
        page = _page(chromium, size)
        log_in(page, live_server, "alice")
        page.goto(f"{live_server.url}{waiting.get_absolute_url()}")
        panel = page.locator("#why-waiting")
        expect(panel).to_be_visible()
        expect(page.locator("#wait-position")).to_contain_text("waiting in partition debug")
        expect(page.locator("#wait-estimate")).to_contain_text("SLURM's estimate")
        expect(page.locator("#wait-priority")).to_contain_text("Fair share")
        expect(page.locator("#wait-age")).to_contain_text("ago")
        _no_horizontal_scroll(page)
        panel.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"waiting-job-{size}.png"), full_page=True)
        panel.screenshot(path=str(SHOTS / f"waiting-panel-{size}.png"))
        sooner = page.locator("#launch-sooner")
        if size == "phone" and sooner.count():
            sooner.click()
            page.wait_for_url(lambda url: "sooner=1" in url)
            expect(page.locator("#id_param_gpus_per_node")).to_have_value("2")
            expect(page.get_by_text("made to start sooner than")).to_be_visible()
        page.context.close()


@pytest.mark.timeout(300)
def test_one_poll_cycle_asks_squeue_start_and_sprio_once_whatever_the_number_of_pending_jobs(
    transactional_db, alice, cluster, sleep_template, course, services, monkeypatch
):
    """30 held jobs of the service account, each a portal job: the cycle makes 1 + 1 + 1 scheduler calls."""
    jobs = []
    for _ in range(30):
        job_id = uuid.uuid4()
        sbatch = ["sbatch", "--parsable", "--hold", "--time=1", "--chdir=/tmp", "--output=/dev/null"]
        submitted = subprocess.run(
            ["runuser", "-u", services["GPULAB_SERVICE_USER"], "--", *sbatch, f"--comment=gpulab:{job_id}"],
            input="#!/bin/sh\ntrue\n",
            capture_output=True,
            text=True,
            check=True,
        )
        jobs.append(
            Job.objects.create(
                id=job_id,
                owner=alice,
                course=course,
                template=sleep_template,
                cluster=cluster,
                script="true",
                state=JobState.PENDING,
                scheduler_id=submitted.stdout.strip(),
                submitted_at=timezone.now(),
            )
        )
    calls: list[list[str]] = []
    real_run = ssh.run

    def counting(cluster, account, argv, **kwargs):
        calls.append(list(argv))
        return real_run(cluster, account, argv, **kwargs)

    monkeypatch.setattr(ssh, "run", counting)
    report = polling.poll_cluster(cluster.pk)
    assert report.error == "" and report.polled == 30
    names = [" ".join(argv[:2]) if argv[:2] == ["squeue", "--start"] else argv[0] for argv in calls]
    assert sorted(names) == sorted(["squeue", "squeue --start", "sprio"]), names
    stored = JobWait.objects.filter(job__in=jobs)
    assert stored.count() == 30
    assert sorted(w.position for w in stored)[-1] >= 30 and all(w.reason for w in stored)
