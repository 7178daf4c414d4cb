"""Labs as data files (labs/builtin_labs/*.yaml, written from the seed handouts), checked on load and loaded into a
course idempotently: loading again updates the text, presets and checks in place and keeps the students' answers and
what their logs were found to hold."""

from __future__ import annotations

from pathlib import Path

import yaml
from django.db import transaction
from rest_framework import serializers

from courses.models import Course
from jobs.models import JobTemplate

from .models import Lab, Section, Step
from .specs import CheckSerializer, QuickFixSerializer

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin_labs"


class LabFileInvalid(ValueError):
    pass


class StepFileSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=200)
    instructions = serializers.CharField(allow_blank=True, required=False, default="")
    template = serializers.SlugField(required=False)
    preset = serializers.DictField(required=False, default=dict)
    fixed = serializers.ListField(child=serializers.CharField(max_length=64), required=False, default=list)
    check = CheckSerializer(required=False)
    quick_fixes = QuickFixSerializer(many=True, required=False, default=list)

    def validate(self, attrs):
        loose = [name for name in attrs["fixed"] if name not in attrs["preset"]]
        if loose:
            raise serializers.ValidationError(f"Fixed values need a preset: {', '.join(loose)}.")
        if attrs.get("check", {}).get("kind", "answer") != "answer" and "template" not in attrs:
            raise serializers.ValidationError("A step whose check reads runs names the template it runs.")
        return attrs


class SectionFileSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=200)
    minutes = serializers.IntegerField(min_value=0, max_value=24 * 60)
    steps = StepFileSerializer(many=True, allow_empty=False)


class LabFileSerializer(serializers.Serializer):
    slug = serializers.SlugField(max_length=50)
    title = serializers.CharField(max_length=200)
    summary = serializers.CharField(allow_blank=True, required=False, default="")
    sections = SectionFileSerializer(many=True, allow_empty=False)


def checked(definition) -> dict:
    """The definition as validated data, or LabFileInvalid naming what is wrong."""
    data = LabFileSerializer(data=definition)
    if not data.is_valid():
        raise LabFileInvalid(f"{definition.get('slug', 'A lab')}: {data.errors}")
    return dict(data.validated_data)


def builtin_definitions() -> dict[str, dict]:
    definitions = [yaml.safe_load(path.read_text()) for path in sorted(BUILTIN_DIR.glob("*.yaml"))]
    return {d["slug"]: d for d in definitions}


def _template(slug: str | None, course: Course) -> JobTemplate | None:
    if slug is None:
        return None
    template = JobTemplate.objects.filter(slug=slug).first()
    if template is None:
        raise LabFileInvalid(f"The template “{slug}” is not in the portal: load the built-in templates first.")
    template.courses.add(course)  # the step's launch button must find it in the course's catalog
    return template


@transaction.atomic
def load_lab(course: Course, definition: dict, *, builtin: str = "") -> Lab:
    data = checked(definition)
    lab, _ = Lab.objects.update_or_create(
        course=course, slug=data["slug"], defaults={"title": data["title"], "summary": data["summary"]}
    )
    if builtin:
        Lab.objects.filter(pk=lab.pk).update(builtin=builtin)
    for s_position, section_data in enumerate(data["sections"], start=1):
        section, _ = Section.objects.update_or_create(
            lab=lab,
            position=s_position,
            defaults={"title": section_data["title"], "planned_minutes": section_data["minutes"]},
        )
        for position, step_data in enumerate(section_data["steps"], start=1):
            Step.objects.update_or_create(section=section, position=position, defaults=_step_fields(step_data, course))
        section.steps.filter(position__gt=len(section_data["steps"])).delete()
    lab.sections.filter(position__gt=len(data["sections"])).delete()
    return lab


def _step_fields(data: dict, course: Course) -> dict:
    return {
        "title": data["title"],
        "instructions": data["instructions"],
        "template": _template(data.get("template"), course),
        "preset": data["preset"],
        "fixed": data["fixed"],
        "check_spec": dict(data.get("check") or {}),
        "quick_fixes": [dict(fix) for fix in data["quick_fixes"]],
    }


def load_builtin_lab(course: Course, slug: str) -> Lab:
    definition = builtin_definitions().get(slug)
    if definition is None:
        raise LabFileInvalid(f"There is no built-in lab “{slug}”.")
    return load_lab(course, definition, builtin=slug)
