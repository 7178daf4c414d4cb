"""Reading a job's output from an offset, for the log tail on the job page and the API.

An offset past the end of the log answers with no data and the log's current size as the next offset (never a
silent restart from 0): a reader that asked from beyond the end learns where the end is and reads on from there.
"""

import re

from django.conf import settings

from clusters import kinds
from clusters.backends.base import BackendError, LogChunk
from clusters.kinds import get_backend

from .kept_logs import MAX_OFFSET, read_kept  # larger offsets are read as MAX_OFFSET
from .models import Job

_DIGITS = re.compile(r"[0-9]{1,100}")


def parse_offset(text: str) -> int:
    """A byte offset written in the digits 0-9 (no sign, spaces or other scripts' digits), or ValueError."""
    if not _DIGITS.fullmatch(text):
        raise ValueError("A whole number of bytes, 0 or more, written with the digits 0-9.")
    return int(text)


def read_log(job: Job, offset: int = 0, stream: str = "") -> LogChunk:
    """`stream` picks one of log_streams(job) (Kubernetes: pod/container); the backend refuses any other."""
    if not job.scheduler_id:
        return LogChunk(offset=0, data="", eof=job.is_terminal, exists=False)
    offset = min(max(0, int(offset)), MAX_OFFSET)
    try:
        chunk = get_backend(job.cluster, job.account).read_log(
            job.pk, offset, settings.GPULAB_LOG_CHUNK_BYTES, scheduler_id=job.scheduler_id, stream=stream
        )
    except BackendError:
        kept = read_kept(job, offset, settings.GPULAB_LOG_CHUNK_BYTES) if job.is_terminal and not stream else None
        if kept is None:
            raise
        return kept
    if not chunk.exists and job.is_terminal and not stream:  # scratch cleaned: the copy the portal kept, if any
        return read_kept(job, offset, settings.GPULAB_LOG_CHUNK_BYTES) or chunk
    return chunk


def log_streams(job: Job) -> list[str]:
    """The job's separate logs, as its cluster's kind names them (Kubernetes: pod/container); [] when it has one."""
    return kinds.kind_of(job.cluster.kind).log_streams(job)
