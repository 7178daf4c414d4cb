"""Reading a job's output from an offset, for the log tail on the job page and the API."""

from django.conf import settings

from clusters.backends import get_backend
from clusters.backends.base import LogChunk

from .models import Job


def read_log(job: Job, offset: int = 0, stream: str = "") -> LogChunk:
    """`stream` picks one of log_streams(job) (Kubernetes: pod/container); the backend refuses any other."""
    if not job.scheduler_id:
        return LogChunk(offset=0, data="", eof=job.is_terminal, exists=False)
    offset = max(0, int(offset))
    return get_backend(job.cluster, job.account).read_log(
        job.pk, offset, settings.GPULAB_LOG_CHUNK_BYTES, scheduler_id=job.scheduler_id, stream=stream
    )


def log_streams(job: Job) -> list[str]:
    if not job.scheduler_id or not job.cluster.is_kubernetes:
        return []
    return get_backend(job.cluster, job.account).log_streams(job.scheduler_id)
