"""The courses a clusters.d file names get its cluster; a slug no course has fails the file (clusters/clusters_d.py)."""

from __future__ import annotations

from clusters.clusters_d import ClusterFileError
from clusters.models import Cluster

from .models import Course


def link_courses(cluster: Cluster, slugs: list[str]) -> None:
    courses = list(Course.objects.filter(slug__in=slugs))
    unknown = set(slugs) - {c.slug for c in courses}
    if unknown:
        raise ClusterFileError(f"{cluster.name}: no course with slug {', '.join(sorted(unknown))}.")
    for course in courses:
        course.clusters.add(cluster)
