"""Copies of finished jobs' logs, kept by the portal so a job's page still shows its output after the cluster's
scratch is cleaned.

Invariant: a job that has ended has at most one KeptLog, holding the start of its log up to GPULAB_KEPT_LOG_BYTES
(`truncated` says when there was more); it is written after the job ends (polling sends the task) and read only when
the cluster no longer has the log or cannot be reached.
"""

from __future__ import annotations

from django.conf import settings

from clusters.backends.base import LogChunk, complete_utf8
from clusters.kinds import get_backend

from .models import Job, KeptLog

TRUNCATED_NOTE = "\n[The portal kept the first {size} of this log; the rest was not kept.]\n"


def keep(job: Job) -> KeptLog | None:
    """Copy the ended job's log from its cluster (again, if asked twice); None when there is no log to copy."""
    if not job.is_terminal or not job.scheduler_id:
        return None
    backend, cap = get_backend(job.cluster, job.account), settings.GPULAB_KEPT_LOG_BYTES
    parts, offset, truncated = [], 0, False
    while True:
        chunk = backend.read_log(
            job.pk, offset, min(settings.GPULAB_LOG_CHUNK_BYTES, cap - offset), scheduler_id=job.scheduler_id
        )
        if not chunk.exists:
            break
        parts.append(chunk.data)
        if chunk.eof or chunk.offset <= offset:
            break
        offset = chunk.offset
        if offset >= cap:
            truncated = not backend.read_log(job.pk, offset, 1, scheduler_id=job.scheduler_id).eof
            break
    if not parts:
        return None
    kept, _ = KeptLog.objects.update_or_create(job=job, defaults={"data": "".join(parts), "truncated": truncated})
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
        raw += TRUNCATED_NOTE.format(size=f"{settings.GPULAB_KEPT_LOG_BYTES // 1024} KiB").encode()
    piece = complete_utf8(raw[offset : offset + limit]) if offset < len(raw) else b""
    end = offset + len(piece) if offset < len(raw) else len(raw)
    return LogChunk(offset=end, data=piece.decode("utf-8", errors="replace"), eof=end >= len(raw))
