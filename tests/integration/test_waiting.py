"""Why am I waiting, on the real stack: the local SLURM's GPUs held by a long job, a second job launched behind it
through the API, the worker's poll reading `squeue --start` and `sprio`, the job page in Chromium (laptop and phone)
and the API showing its place, SLURM's estimated start and what would start it sooner; and the number of scheduler
calls one poll cycle makes with many pending jobs.

Screenshots go to $GPULAB_SCREENSHOT_DIR (default /tmp/gpulab-shots).
"""

import subprocess
import uuid
from datetime import UTC, datetime
from pathlib import Path

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

from .conftest import slurm, wait_for
from .test_browser import log_in
from .test_job_page_browser import SHOTS, WIDTHS, _no_horizontal_scroll, _page

# Its jobs hold the node's GPUs so that others wait, and it reads the whole queue: alone on the node.
pytestmark = pytest.mark.slurm_exclusive


def _learn_partitions(cluster) -> None:
    """What an admin's Test connection stores: each partition's GPUs per node, from sinfo."""
    limits = get_backend(cluster).partition_limits()
    Cluster.objects.filter(pk=cluster.pk).update(partition_limits={n: p.as_dict() for n, p in limits.items()})


def _learn_partitions_over_ssh(cluster) -> None:
    """The REST kind learns no partitions of its own: the figures the SSH kind's sinfo gives for the same SLURM."""
    from clusters.backends.kinds.slurm.backend import parse_partitions

    limits = parse_partitions(slurm("sinfo", "--all", "--noheader", "--format=%P|%D|%s|%l|%G"))
    Cluster.objects.filter(pk=cluster.pk).update(partition_limits={n: p.as_dict() for n, p in limits.items()})


@pytest.fixture
def aside(services):
    """sbatch as the REST kind's lab user, whose jobs other test runs on this shared cluster never scancel (they
    cancel the service account's), carrying the portal job's UUID as the portal does; returns the SLURM id. The poll
    asks for jobs by id, whoever owns them. The jobs are cancelled at the end."""
    submitted: list[str] = []

    def submit(job_id, *options: str) -> str:
        sbatch = ["sbatch", "--parsable", "--chdir=/tmp", "--output=/dev/null", f"--comment=gpulab:{job_id}", *options]
        scheduler_id = subprocess.run(
            ["runuser", "-u", services["GPULAB_SLURMREST_USER"], "--", *sbatch],
            input="#!/bin/sh\ntrue\n",
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        submitted.append(scheduler_id)
        return scheduler_id

    yield submit
    if submitted:
        slurm("scancel", *submitted)


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
    holder = job_state(launch(api_for, bob, seconds=600, time_minutes=10, gpus_per_node=2), "running", timeout=240)
    waiting = job_state(launch(api_for, alice, seconds=5, time_minutes=5, gpus_per_node=4), "pending")

    def estimated():
        wait = JobWait.objects.filter(job=waiting).first()
        return wait if wait and wait.estimated_start and wait.advice else None

    wait_for(estimated, timeout=90, what="the poll to store an estimated start")
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
    assert estimate.timestamp() >= holder_ends - 90  # not before the 2-GPU job reaches its limit (or later, behind
    # whatever else the shared cluster runs)
    assert wait["factors"] and "Fair share" in wait["factors"]  # sprio, with multifactor priority
    # Bob's job leaves 2 GPUs of the node's 4 (fewer when other runs on this shared cluster hold some): what is free
    # is offered, or, with none free, the advice says nothing smaller would start sooner.
    if wait["suggested"]:
        free = wait["suggested"]["gpus_per_node"]
        assert 1 <= free <= 2 and "instead of 4 SLURM could start it now" in wait["advice"][0]
    else:
        assert "would not start it sooner" in wait["advice"][0]


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
            offered = JobWait.objects.get(job=waiting).suggested["gpus_per_node"]
            expect(page.locator("#id_param_gpus_per_node")).to_have_value(str(offered))
            expect(page.get_by_text("made to start sooner than")).to_be_visible()
        page.goto(f"{live_server.url}/jobs/")  # the student's job list says the place too
        expect(page.locator(".wait-place")).to_contain_text("in debug")
        _no_horizontal_scroll(page)
        page.screenshot(path=str(SHOTS / f"waiting-job-list-{size}.png"), full_page=True)
        page.context.close()


@pytest.mark.timeout(300)
def test_one_poll_cycle_asks_squeue_start_and_sprio_once_whatever_the_number_of_pending_jobs(
    transactional_db, alice, cluster, sleep_template, course, monkeypatch, aside
):
    """30 held jobs, each a portal job: the cycle makes 1 + 1 + 1 scheduler calls."""
    jobs: list[Job] = []
    for _ in range(30):
        job_id = uuid.uuid4()
        jobs.append(
            Job.objects.create(
                id=job_id,
                owner=alice,
                course=course,
                template=sleep_template,
                cluster=cluster,
                script="true",
                state=JobState.PENDING,
                scheduler_id=aside(job_id, "--hold", "--time=1"),
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


@pytest.mark.timeout(420)
@pytest.mark.slurm_node  # root's job holds every GPU of the node, with no worker behind it
def test_slurmrestd_cluster_gives_the_estimate_and_priority_from_the_polls_own_job_list(
    transactional_db, alice, cluster, sleep_template, course, services, monkeypatch, aside
):
    """The same SLURM through slurmrestd: a job behind a root job holding every GPU gets slurmctld's estimate and its
    priority from the one GET …/jobs the poll makes (no factors in v0.0.38: the wait says so)."""
    from clusters.backends import tokens
    from clusters.backends.kinds.slurm_rest import backend as rest_backend

    token = Path(services["GPULAB_SLURMREST_TOKEN_FILE"]).read_text().strip()
    Cluster.objects.filter(pk=cluster.pk).update(kind="slurm-rest", api_url=services["GPULAB_SLURMREST_URL"])
    cluster.refresh_from_db()
    account = cluster.service_account()
    account.set_api_token(token, tokens.expires_at(token))
    account.save()
    _learn_partitions_over_ssh(cluster)
    holder = slurm("sbatch", "--parsable", "--gres=gpu:4", "--time=10", "--output=/dev/null", "--wrap=sleep 600")
    try:
        state = ["squeue", "--noheader", f"--jobs={holder.strip()}", "--format=%T"]
        wait_for(lambda: slurm(*state).strip() == "RUNNING", timeout=180, what="root's job to hold every GPU")
        job_id = uuid.uuid4()
        waiting = aside(job_id, "--gres=gpu:1", "--time=5")
        job = Job.objects.create(
            id=job_id,
            owner=alice,
            course=course,
            template=sleep_template,
            cluster=cluster,
            script="true",
            state=JobState.PENDING,
            scheduler_id=waiting,
            submitted_at=timezone.now(),
        )
        paths: list[str] = []
        real_request = rest_backend.RestClient.request

        def noting(self, method, path, **kwargs):
            paths.append(path)
            return real_request(self, method, path, **kwargs)

        monkeypatch.setattr(rest_backend.RestClient, "request", noting)

        def estimated():
            paths.clear()
            assert not polling.poll_cluster(cluster.pk).error
            wait = JobWait.objects.filter(job=job).first()
            # slurmctld may give a start estimate before its first scheduling pass has set the reason ("None").
            return wait if wait and wait.estimated_start and wait.reason else None

        wait = wait_for(estimated, timeout=60, interval=2, what="slurmctld's estimate and reason over REST")
        assert [p for p in paths if p.endswith("/jobs")] == ["/slurm/v0.0.38/jobs"]  # the poll's list, and no other
        assert wait.priority and wait.factors == [] and "not what makes it" in wait.note
        assert wait.position >= 1 and wait.reason.startswith("The GPUs or cores it asks for are in use")
        estimate = _slurm_estimate(waiting)
        assert estimate is not None and abs((wait.estimated_start - estimate).total_seconds()) <= 60
    finally:
        slurm("scancel", holder.strip())
