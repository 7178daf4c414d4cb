"""Copies of finished jobs' logs, kept by the portal so a job's page still shows its output after the cluster's
scratch is cleaned.

Invariant: a job that has ended has at most one KeptLog, holding the END of its log, its last GPULAB_KEPT_LOG_BYTES
from the first whole line (where a failed job says why); `truncated` says the beginning was cut, and the kept log then
opens with a line saying so. It is written after the job ends (polling sends the task) and read only when the cluster
no longer has the log or cannot be reached; a load generator's report in it is kept then as the job's last load test
(jobs/servers.py), so a batch-inference run's TTFT and TPOT outlive its pods.
"""

from __future__ import annotations

from django.conf import settings

from clusters.backends.base import LogChunk, complete_utf8
from clusters.kinds import get_backend

from .models import Job, KeptLog
from .servers import keep_report_in_log

TRUNCATED_NOTE = "[The portal kept the last {size} of this log; its beginning was cut.]\n"
# Past the end of any real log: a backend answers a read from here with where the log ends (jobs/logs.py clamps to it).
MAX_OFFSET = 2**62


def keep(job: Job) -> KeptLog | None:
    """Copy the end of the ended job's log from its cluster (again, if asked twice); None when there is no log."""
    if not job.is_terminal or not job.scheduler_id:
        return None
    backend, cap = get_backend(job.cluster, job.account), settings.GPULAB_KEPT_LOG_BYTES
    end = backend.read_log(job.pk, MAX_OFFSET, 1, scheduler_id=job.scheduler_id)
    if not end.exists:
        return None
    start = offset = max(0, end.offset - cap)
    parts: list[str] = []
    while offset < end.offset:
        chunk = backend.read_log(
            job.pk, offset, min(settings.GPULAB_LOG_CHUNK_BYTES, end.offset - offset), scheduler_id=job.scheduler_id
        )
        if not chunk.exists or chunk.offset <= offset:
            break
        parts.append(chunk.data)
        offset = chunk.offset
    data = "".join(parts)
    if start > 0:  # cut at a line's start, not inside a line or a character
        data = data.partition("\n")[2]
    kept, _ = KeptLog.objects.update_or_create(job=job, defaults={"data": data, "truncated": start > 0})
    keep_report_in_log(job, data)
    return kept


def keep_by_id(job_id) -> KeptLog | None:
    job = Job.objects.select_related("cluster", "account").filter(pk=job_id).first()
    return keep(job) if job else None


def read_kept(job: Job, offset: int, limit: int) -> LogChunk | None:
    """The kept log from `offset` (bytes), as the cluster would have answered; None when none was kept."""
    kept = KeptLog.objects.filter(job=job).first()
    if kept is None:
        return None
    raw = kept.data.encode()
    if kept.truncated:
        raw = TRUNCATED_NOTE.format(size=f"{settings.GPULAB_KEPT_LOG_BYTES // 1024} KiB").encode() + raw
    piece = complete_utf8(raw[offset : offset + limit]) if offset < len(raw) else b""
    end = offset + len(piece) if offset < len(raw) else len(raw)
    return LogChunk(offset=end, data=piece.decode("utf-8", errors="replace"), eof=end >= len(raw))
