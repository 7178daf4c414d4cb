"""Copy a course to a new term: what a new offering of the same course starts from.

It carries the course's settings and per-student limits (every field but its name, slug and dates), its
clusters, and its templates: built-in ones are shared, so the new course is added to them; the course's own are
copied, so editing one in the new term never changes what the old term ran. It carries no people (the person
copying becomes the new course's only instructor), no per-student overrides, no jobs, no notices.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils.text import slugify

from .models import Course, Enrollment, Role

NOT_CARRIED = {"id", "name", "slug", "term_starts_at", "term_ends_at", "created_at"}
TEMPLATE_NOT_CARRIED = {"id", "slug", "builtin", "copied_from", "created_by", "created_at", "updated_at"}


def carried_fields(model, skip: set[str]) -> list[str]:
    return [f.name for f in model._meta.concrete_fields if f.name not in skip and f.attname not in skip]


def copy_to_new_term(course: Course, *, actor, name: str, slug: str, starts: datetime, ends: datetime) -> Course:
    """The new course. The caller has validated the slug and the dates (courses.forms.CopyTermForm)."""
    with transaction.atomic():
        new = Course(name=name, slug=slug, term_starts_at=starts, term_ends_at=ends)
        for field in carried_fields(Course, NOT_CARRIED):
            setattr(new, field, getattr(course, field))
        new.full_clean()
        new.save()
        new.clusters.set(course.clusters.all())
        Enrollment.objects.create(course=new, user=actor, role=Role.INSTRUCTOR)
        for placement in course.template_placements.select_related("template"):  # the catalog's order, kept
            template = placement.template
            if template.builtin:
                template.courses.add(new)
            else:
                _copy_template(template, new, actor)
    return new


def _copy_template(template, course: Course, actor):
    model = type(template)
    copy = model(slug=free_slug(model, f"{template.slug}-{course.slug}"), created_by=actor, copied_from=template)
    for field in carried_fields(model, TEMPLATE_NOT_CARRIED):
        setattr(copy, field, getattr(template, field))
    copy.save()
    copy.courses.set([course])
    return copy


def free_slug(model, wanted: str) -> str:
    """`wanted` cut to the slug field's length, with -2, -3 … where another template holds it."""
    limit = model._meta.get_field("slug").max_length
    base = slugify(wanted)[:limit].strip("-")
    slug, n = base, 1
    while model.objects.filter(slug=slug).exists():
        n += 1
        suffix = f"-{n}"
        slug = base[: limit - len(suffix)].rstrip("-") + suffix
    return slug
