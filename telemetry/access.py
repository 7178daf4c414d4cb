"""Who may open a compute node's page and telemetry: admins only, as a node mixes every course's jobs.

Jobs, their streams and the course dashboards are asked of jobs/access.py, which this stands beside.
"""

from __future__ import annotations

from django.http import Http404

from core.roles import is_admin

from .models import Node


def get_node(user, node_id) -> Node:
    """A compute node's page and telemetry: admins only (a node mixes every course's jobs); 404 for anyone else."""
    if not is_admin(user):
        raise Http404("No such node.")
    try:
        return Node.objects.select_related("cluster").get(pk=int(node_id))
    except (Node.DoesNotExist, ValueError, TypeError):
        raise Http404("No such node.") from None
