"""Who may see and act on a sweep: the same answer as for its runs (jobs/access.py). Its owner, the course's staff,
admins; anyone else gets 404, never a hint that it exists."""

from __future__ import annotations

import uuid

from django.db.models import Q, QuerySet
from django.http import Http404

from courses.access import teaching_courses
from jobs import access

from .models import Sweep


def visible_sweeps(user) -> QuerySet[Sweep]:
    if access.is_admin(user):
        return Sweep.objects.all()
    if not user.is_authenticated:
        return Sweep.objects.none()
    return Sweep.objects.filter(Q(owner=user) | Q(course__in=teaching_courses(user)))


def get_sweep(user, sweep_id) -> Sweep:
    """A sweep the user may see and cancel; 404 for anything else."""
    try:
        sweep_uuid = uuid.UUID(str(sweep_id))
    except ValueError:
        raise Http404("No such sweep.") from None
    found = visible_sweeps(user).select_related("template", "cluster", "course", "owner").filter(pk=sweep_uuid).first()
    if found is None:
        raise Http404("No such sweep.")
    return found
