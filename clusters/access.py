"""Which clusters a user may see: those of the courses they are enrolled in (every one for an admin).

The course questions (courses/access.py) stand on this one; it follows the Course.clusters relation from the
cluster's side, so clusters never imports courses. Anything a user may not see is reported as missing (Http404).
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from core.roles import is_admin

from .models import Cluster


def visible_clusters(user) -> QuerySet[Cluster]:
    if is_admin(user):
        return Cluster.objects.all()
    if not user.is_authenticated:
        return Cluster.objects.none()
    return Cluster.objects.filter(courses__enrollments__user=user, enabled=True).distinct()


def get_files_cluster(user, cluster_id) -> Cluster:
    """A cluster whose file browser (the user's own lab space on it) the user may open: one of their courses'
    clusters (any for an admin); 404 for anything else. The space is always the user's own."""
    try:
        return visible_clusters(user).get(pk=int(cluster_id))
    except (ValueError, TypeError, Cluster.DoesNotExist):
        raise Http404("No such cluster.") from None
