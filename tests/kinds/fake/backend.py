"""An in-memory scheduler behind the backend interface: submit, find, poll many at once, cancel, logs."""

from __future__ import annotations

import itertools
from pathlib import Path

from clusters.backends.base import ClusterBackend, ConnectionReport, LogChunk, SchedulerStatus, SubmitRequest
from core.choices import JobState


class MemoryBackend(ClusterBackend):
    jobs: dict[str, dict] = {}  # scheduler id → {"job_id", "script", "status"}
    poll_calls: list[list[str]] = []
    _ids = itertools.count(1)

    @classmethod
    def reset(cls) -> None:
        cls.jobs, cls.poll_calls = {}, []

    @classmethod
    def move(cls, scheduler_id: str, state: str, **fields) -> None:
        """What the test makes the 'scheduler' do next."""
        cls.jobs[scheduler_id]["status"] = SchedulerStatus(scheduler_id=scheduler_id, state=state, **fields)

    def submit(self, request: SubmitRequest) -> str:
        scheduler_id = f"mem-{next(self._ids)}"
        pending = SchedulerStatus(scheduler_id=scheduler_id, state=JobState.PENDING, raw_state="WAITING")
        MemoryBackend.jobs[scheduler_id] = {"job_id": request.job_id, "script": request.script, "status": pending}
        return scheduler_id

    def find_submitted(self, request: SubmitRequest) -> str | None:
        return next((sid for sid, job in MemoryBackend.jobs.items() if job["job_id"] == request.job_id), None)

    def poll(self, scheduler_ids: list[str]) -> dict[str, SchedulerStatus]:
        MemoryBackend.poll_calls.append(list(scheduler_ids))
        return {sid: MemoryBackend.jobs[sid]["status"] for sid in scheduler_ids if sid in MemoryBackend.jobs}

    def cancel(self, scheduler_id: str) -> SchedulerStatus | None:
        MemoryBackend.move(scheduler_id, JobState.CANCELLED, raw_state="STOPPED")
        return MemoryBackend.jobs[scheduler_id]["status"]

    def read_log(self, job_id, offset: int, limit: int, *, scheduler_id: str = "", stream: str = "") -> LogChunk:
        job = MemoryBackend.jobs.get(scheduler_id)
        data = f"ran: {job['script']}\n".encode() if job else b""
        chunk = data[offset : offset + limit]
        return LogChunk(offset=offset + len(chunk), data=chunk.decode(), eof=offset + len(chunk) >= len(data))

    def test_connection(self) -> ConnectionReport:
        return ConnectionReport(ok=True, lines=["memory"], facts={"slots_free": 8 - len(self.jobs)})

    def stage_lab_files(self, source: Path) -> int:
        return 0
