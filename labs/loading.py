"""A lab file into a course: checked as a whole (labs/lab_files.py for its shape, labs/specs.py for each step's values
against its template's typed parameters) before anything is written.

A step's template must be one the course offers, or a built-in one (loading adds it to the course's catalog, so the
step's launch button finds it); another course's template is refused by name. load_lab() updates a lab of the same
slug in place (the built-in labs, loaded again); import_lab() always makes a new lab, under a free slug.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q
from django.utils.text import slugify

from core.templating.params import CLUSTER_CHOICES, SchemaError
from courses.models import Course
from jobs.models import JobTemplate

from .editing import save_step
from .lab_files import LabFileInvalid, checked
from .models import Lab, Section, Step
from .specs import template_problems

__all__ = [
    "RESERVED_SLUGS",
    "LabFileInvalid",
    "cluster_choices",
    "free_lab_slug",
    "import_lab",
    "load_lab",
    "offered_templates",
]

RESERVED_SLUGS = frozenset({"new", "import", "load"})  # the course's lab pages' own addresses (labs/urls.py)


def offered_templates(course: Course):
    """The templates a step of this course's labs may launch: the course's own, and the built-in ones."""
    return JobTemplate.objects.filter(Q(courses=course) | Q(builtin=True)).distinct()


def cluster_choices(course: Course) -> dict[str, tuple[str, ...]]:
    """The partitions and GPU types the course's clusters offer, for a preset of a choice the clusters fill."""
    clusters = list(course.clusters.all())
    return {
        name: tuple(sorted({value for cluster in clusters for value in getattr(cluster, field) or []}))
        for name, field in CLUSTER_CHOICES.items()
    }


def _resolved(course: Course, data: dict) -> list[list[dict]]:
    """Each step's fields for the database, its template found and its values typed; LabFileInvalid names every step
    whose template or values do not fit."""
    slugs = {step.get("template") for s in data["sections"] for step in s["steps"]} - {None}
    templates = {t.slug: t for t in offered_templates(course).filter(slug__in=slugs)}
    choices = cluster_choices(course)
    problems: list[str] = []
    resolved = []
    for s_index, section in enumerate(data["sections"], start=1):
        rows = []
        for index, step in enumerate(section["steps"], start=1):
            where = f"Section {s_index} “{section['title']}”, step {index} “{step['title']}”"
            fields, said = _step_fields(step, templates, choices)
            problems += [f"{where}, {message}" for message in said]
            rows.append(fields)
        resolved.append(rows)
    if problems:
        raise LabFileInvalid(" ".join(problems), problems)
    return resolved


def _step_fields(step: dict, templates: dict, choices: dict) -> tuple[dict, list[str]]:
    slug = step.get("template")
    template = templates.get(slug) if slug else None
    check = dict(step.get("check") or {})
    fields = {
        "title": step["title"],
        "instructions": step["instructions"],
        "template": template,
        "preset": dict(step["preset"]),
        "fixed": list(step["fixed"]),
        "check_spec": check,
        "quick_fixes": [dict(fix) for fix in step["quick_fixes"]],
    }
    if slug and template is None:
        return fields, [
            f"template: “{slug}” is not one of this course's templates. Add it on the course's templates page (or copy "
            "the built-in one), or change the step's template."
        ]
    if template is None:
        return fields, [] if not step["preset"] else ["preset: a step that launches no template presets nothing."]
    try:
        schema = template.schema()
    except SchemaError:
        return fields, [f"template: the parameters of “{slug}” do not parse; fix the template first."]
    typed, problems = template_problems(schema, step["preset"], step["fixed"], check, choices)
    fields["preset"] = typed
    return fields, [f"{where.replace('.', ' ')}: {message}" for where, message in problems.items()]


def _write_sections(lab: Lab, course: Course, data: dict, resolved: list[list[dict]]) -> None:
    """Sections and steps by place: the step at a place keeps its row (and its students' progress), takes the new
    fields; places beyond the file's are removed."""
    for s_position, (section_data, steps) in enumerate(zip(data["sections"], resolved, strict=True), start=1):
        section, _ = Section.objects.update_or_create(
            lab=lab,
            position=s_position,
            defaults={"title": section_data["title"], "planned_minutes": section_data["minutes"]},
        )
        for position, fields in enumerate(steps, start=1):
            step = Step.objects.filter(section=section, position=position).first() or Step(
                section=section, position=position
            )
            save_step(step, fields)
            if fields["template"] is not None:
                fields["template"].courses.add(course)  # the step's launch button must find it in the catalog
        section.steps.filter(position__gt=len(steps)).delete()
    lab.sections.filter(position__gt=len(data["sections"])).delete()


@transaction.atomic
def load_lab(course: Course, definition, *, builtin: str = "") -> Lab:
    """The lab of the file's slug in the course, made or updated in place."""
    data = checked(definition)
    resolved = _resolved(course, data)
    lab, _ = Lab.objects.update_or_create(
        course=course, slug=data["slug"], defaults={"title": data["title"], "summary": data["summary"]}
    )
    if builtin:
        Lab.objects.filter(pk=lab.pk).update(builtin=builtin)
    _write_sections(lab, course, data, resolved)
    return lab


def free_lab_slug(course: Course, wanted: str) -> str:
    """`wanted` as a slug, with -2, -3 … where another lab of the course holds it."""
    limit = Lab._meta.get_field("slug").max_length or 50
    base = slugify(wanted)[:limit].strip("-") or "lab"
    slug, n = base, 1
    while slug in RESERVED_SLUGS or Lab.objects.filter(course=course, slug=slug).exists():
        n += 1
        slug = f"{base[: limit - len(str(n)) - 1].rstrip('-')}-{n}"
    return slug


@transaction.atomic
def import_lab(course: Course, definition) -> Lab:
    """A new lab in the course from a lab file: under the file's slug, or the next free one beside it."""
    data = checked(definition)
    resolved = _resolved(course, data)
    lab = Lab.objects.create(
        course=course, slug=free_lab_slug(course, data["slug"]), title=data["title"], summary=data["summary"]
    )
    _write_sections(lab, course, data, resolved)
    return lab
