"""A running job's web dashboard (Kubernetes: KubeRay's Ray dashboard), kind-neutral: whether the job has one, the
path the portal proxies it under, and where it answers (the kind's answer, kept a short while).

Unlike JupyterLab, which serves under the portal's own path (its base_url), a dashboard serves from its own root: the
proxy (sessions/notebook_proxy.py) takes the prefix off each request and puts it back into the links a proxy on the
way rewrote. A dashboard has no token of its own; the address holds only what authenticates the portal on the way
(the API server's), kept encrypted in the cache as a notebook's is.
"""

from __future__ import annotations

import json
import os

from django.core.cache import cache

from clusters import crypto, kinds
from clusters.backends.kind import NotebookAddress, dashboard_path
from jobs.models import Job

ADDRESS_SECONDS = 300


def prefix(job_id) -> str:
    return dashboard_path(job_id)


def name_of(job: Job) -> str:
    """What the job page calls the job's dashboard ("Ray dashboard"); "" when the job has none."""
    return kinds.kind_of(job.cluster.kind).dashboard_name(job)


def _key(job_id) -> str:
    return f"gpulab:dashboard:{job_id}"


def address(job: Job) -> NotebookAddress:
    """The kind's answer for this job, from the cache when it was asked within ADDRESS_SECONDS."""
    kept = cache.get(_key(job.pk))
    if kept:
        found = NotebookAddress(**json.loads(crypto.decrypt(kept)))
        if all(os.path.isfile(path) for path in (found.cert_file, found.key_file) if path):
            return found
    found = kinds.kind_of(job.cluster.kind).dashboard_address(job)
    cache.set(_key(job.pk), crypto.encrypt(json.dumps(found.__dict__)), ADDRESS_SECONDS)
    return found


def forget(job_id) -> None:
    """The dashboard did not answer where it was said to be: ask the kind again next time."""
    cache.delete(_key(job_id))
