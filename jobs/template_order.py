"""The order of a course's templates: its catalog lists them as its instructors arrange them on the course's
templates page. A template added to a course (no position yet) comes after the others, in the order they were added;
the first move numbers them all."""

from __future__ import annotations

from django.db import transaction

from .models import CourseTemplate, JobTemplate


def move(course, template: JobTemplate, step: int) -> bool:
    """Move the template `step` places (-1: up, 1: down) in the course's order; False where it cannot go further.
    CourseTemplate.DoesNotExist where the course does not offer it."""
    with transaction.atomic():
        placements = list(CourseTemplate.objects.select_for_update().filter(course=course))
        at = next((i for i, p in enumerate(placements) if p.template_id == template.pk), None)
        if at is None:
            raise CourseTemplate.DoesNotExist
        to = at + step
        if not 0 <= to < len(placements):
            return False
        placements[at], placements[to] = placements[to], placements[at]
        for position, placement in enumerate(placements):
            placement.position = position
        CourseTemplate.objects.bulk_update(placements, ["position"])
    return True
