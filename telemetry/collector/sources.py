"""The collector's periodic readers: what every source stands on (Periodic, running_jobs) and the job logs.

Each cluster's own source is the one its kind names (Kind.telemetry_source, run.SOURCES): both SLURM kinds'
"nodes-over-ssh" (batch_source.py), Kubernetes' "metrics-api" (kubernetes_source.py). Each runs in its own
thread and asks its cluster once per cycle for everything (one `scontrol show job -d`, one pod-metrics list per
namespace), then writes the answer into LiveState. A cluster that does not answer keeps its last picture; the frames
turn it stale on their own.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from django.db import close_old_connections

from clusters.backends.base import BackendError
from core.choices import JobState
from jobs.logs import read_log
from jobs.models import Job
from telemetry.live import JobRef, LiveState
from telemetry.parsers import parse_trainer_line

logger = logging.getLogger(__name__)


class Periodic(threading.Thread):
    """Runs `cycle` every `interval` seconds until stopped; errors are logged, never fatal."""

    interval = 5.0

    def __init__(self, name: str, stop: threading.Event):
        super().__init__(name=name, daemon=True)
        self.stop_event = stop
        self.cycles = 0

    def run(self) -> None:
        while not self.stop_event.is_set():
            started = time.monotonic()
            try:
                self.cycle()
            except BackendError as exc:
                logger.warning("telemetry: %s: %s", self.name, exc)
            except Exception:
                logger.exception("telemetry: %s failed", self.name)
            finally:
                close_old_connections()
            self.cycles += 1
            self.stop_event.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def cycle(self) -> None:
        raise NotImplementedError


def running_jobs(**filters) -> dict[str, JobRef]:
    """Running portal jobs (with a scheduler id) matching `filters`, by scheduler id, in one query."""
    rows = (
        Job.objects.filter(state=JobState.RUNNING, **filters)
        .exclude(scheduler_id="")
        .values_list("scheduler_id", "pk", "owner__username", "course_id", "gpus", "template__name")
    )
    return {
        sid: JobRef(str(pk), owner, course_id, gpus, template or "")
        for sid, pk, owner, course_id, gpus, template in rows
    }


class LogSource(Periodic):
    """Follows the log of every running job: new text goes to the job's page, trainer lines become curves."""

    interval = 2.0

    def __init__(self, state: LiveState, out: queue.Queue, stop: threading.Event, clusters: Callable[[], list[int]]):
        super().__init__("logs", stop)
        self.state, self.out, self.clusters = state, out, clusters
        self.offsets: dict[str, int] = {}
        self.partial: dict[str, str] = {}

    def cycle(self) -> None:
        followed = running_jobs(cluster_id__in=self.clusters())
        self.state.put_followed({job.job_id: job for job in followed.values()})
        running = list(
            Job.objects.filter(pk__in=[job.job_id for job in followed.values()]).select_related("cluster", "account")
        )
        for job in running:
            try:
                self._follow(job)
            except BackendError as exc:
                logger.info("telemetry: log of %s: %s", job.pk, exc)
        alive = {str(job.pk) for job in running}
        for job_id in [j for j in self.offsets if j not in alive]:
            self.offsets.pop(job_id, None)
            self.partial.pop(job_id, None)

    def _follow(self, job: Job) -> None:
        job_id = str(job.pk)
        for _ in range(8):  # at most 8 chunks per cycle, so one chatty job cannot hold the others back
            offset = self.offsets.get(job_id, 0)
            chunk = read_log(job, offset)
            if not chunk.data:
                return
            self.offsets[job_id] = chunk.offset
            self.out.put((job_id, offset, chunk.offset, chunk.data))
            text = self.partial.get(job_id, "") + chunk.data
            *lines, self.partial[job_id] = text.split("\n")
            points = [p for p in map(parse_trainer_line, lines) if p is not None]
            if points:
                self.state.add_trainer_points(job_id, points)
            if chunk.eof:
                return
