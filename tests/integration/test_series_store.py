"""Series that outlive the ring, on the real stack: the collector streams a SLURM job's GPUs over SSH, stores
their ten-second buckets in PostgreSQL, and a restarted collector keeps what was stored and adds to it."""

from __future__ import annotations

import pytest

from telemetry.models import SeriesChunk

from .conftest import ROOT, Daemon, wait_for
from .test_telemetry import running_gpu_job
from .ws import Socket


def stored_while_running(job, chunks, **filters) -> bool:
    """Whether buckets matching filters are stored; fails at once if the job stopped running first."""
    if chunks.filter(series__has_key="gpu-util", **filters).exists():
        return True
    job.refresh_from_db()
    assert job.state == "running", f"the job left running ({job.state}) before its series were stored"
    return False


def start_collector(portal_env, log) -> Daemon:
    argv = [str(ROOT / ".venv/bin/python"), str(ROOT / "manage.py"), "collect_telemetry"]
    env = {**portal_env, "TELEMETRY_FLUSH_SECONDS": "2"}  # a flush every 2 s instead of every minute
    return Daemon(argv, env, log, lambda text: text.count("telemetry: following") >= 1).start()


@pytest.mark.timeout(240)
def test_a_collector_restart_keeps_the_stored_series_and_the_page_shows_both_runs(
    worker, web, api_for, alice, cluster, sleep_template, job_state, portal_env, tmp_path
):
    import redis

    client = redis.Redis.from_url(portal_env["REDIS_URL"])
    for key in client.scan_iter("gpulab:telemetry:*"):
        client.delete(key)
    collector = start_collector(portal_env, tmp_path / "collector-1.log")
    try:
        job = running_gpu_job(api_for, alice, job_state, gpus=1, seconds=200)
        chunks = SeriesChunk.objects.filter(job=job)
        wait_for(lambda: stored_while_running(job, chunks), timeout=60, what="stored GPU buckets")
    finally:
        collector.stop()  # SIGTERM: the collector stores its open buckets on the way out
    kept = {c.pk: c.end for c in chunks.all()}
    last_end = max(kept.values())
    stored_util = [c.series["gpu-util"] for c in chunks.all() if "gpu-util" in c.series]
    first_x = min(x for traces in stored_util for t in traces.values() for x in t["x"])

    collector = start_collector(portal_env, tmp_path / "collector-2.log")
    try:
        wait_for(
            lambda: stored_while_running(job, chunks, start__gte=last_end),
            timeout=60,
            what="buckets stored by the restarted collector",
        )
        assert set(kept) <= set(chunks.values_list("pk", flat=True))  # nothing stored before the restart is lost
        with Socket(web, alice, f"/ws/jobs/{job.pk}/") as socket:
            history = socket.wait(lambda m: m["type"] == "series", what="the series message")
        util = history["charts"]["gpu-util"][0]
        assert util["x"][0] <= first_x and util["x"][-1] > last_end.timestamp() * 1000
    finally:
        collector.stop()


@pytest.mark.timeout(180)
def test_a_finished_jobs_loss_is_rebuilt_from_its_log_when_none_was_stored(
    worker, web, api_for, alice, course, cluster, job_state
):
    from django.core.management import call_command

    from jobs.models import Job, JobTemplate

    template = JobTemplate.objects.create(
        name="Trainer lines",
        slug="trainer-lines-rebuild",
        body='for i in 1 2 3; do echo "epoch=0 step=$((i * 10)) loss=$((4 - i)).5 tok/s=900.0"; done\n',
        parameters=[{"name": "gpus_per_node", "type": "int", "label": "GPUs", "default": 0, "min": 0, "max": 1}],
        status=JobTemplate.Status.PUBLISHED,
    )
    template.courses.add(course)
    answer = api_for(alice).post("/api/v1/jobs/", {"template": template.slug, "cluster": "local"}, format="json")
    job = job_state(Job.objects.get(pk=answer.json()["id"]), "completed")  # no collector ran: nothing stored
    assert not SeriesChunk.objects.filter(job=job).exists()

    call_command("rebuild_series", str(job.pk))
    call_command("rebuild_series", str(job.pk))  # a second run adds nothing
    (chunk,) = SeriesChunk.objects.filter(job=job)
    assert chunk.series["loss"]["loss"]["x"] == [10, 20, 30] and chunk.series["loss"]["loss"]["y"] == [3.5, 2.5, 1.5]
    with Socket(web, alice, f"/ws/jobs/{job.pk}/") as socket:
        history = socket.wait(lambda m: m["type"] == "series", what="the series message")
    assert history["recorded"] is True and history["charts"]["tokens"][0]["y"] == [900.0, 900.0, 900.0]
