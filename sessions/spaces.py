"""Which space a request's URL names, decided by jobs/access.py: a cluster's space is always the requesting
user's own; a job's run directory is for whoever may see the job (its owner changes it, its course's staff read it).
Another student's job is a 404, as everywhere."""

from __future__ import annotations

from jobs import access

from .files import Space, home_space, job_space


def space_for(user, *, cluster_id=None, job_id=None, write: bool = False) -> Space:
    if job_id is not None:
        return job_space(access.get_job_files(user, job_id, write=write))
    return home_space(access.get_files_cluster(user, cluster_id), user)
