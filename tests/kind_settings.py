"""Tests set a kind's settings of a cluster or a course (clusters/kind_settings.py) as an admin's form or Test
connection would leave them: merged into the row's JSON."""

from __future__ import annotations

from clusters.models import Cluster
from courses.models import Course


def set_cluster(cluster: Cluster, *, save: bool = False, **values) -> Cluster:
    cluster.kind_settings = {**(cluster.kind_settings or {}), **values}
    if save:
        Cluster.objects.filter(pk=cluster.pk).update(kind_settings=cluster.kind_settings)
    return cluster


def set_course(course: Course, kind: str = "kubernetes", *, save: bool = False, **values) -> Course:
    stored = dict(course.kind_settings or {})
    stored[kind] = {**(stored.get(kind) or {}), **values}
    course.kind_settings = stored
    if save:
        Course.objects.filter(pk=course.pk).update(kind_settings=stored)
    return course
