"""A lab as a file: the YAML the built-in labs are written in (labs/builtin_labs/*.yaml), the shape it must have
(DRF serializers built on labs/specs.py), reading such a file safely and writing a lab back out as one.

Reading is plain data only: PyYAML's safe loader (no tags that build objects), no anchors or aliases (a few lines of
them expand into millions of nodes), bounded size and nesting, and every key known. What is wrong is said as a
path an instructor can find: "Section 2 “Run at scale”, step 1 “Train with DDP”, check: A log check needs pattern."
"""

from __future__ import annotations

from typing import Any

import yaml
from rest_framework import serializers

from .models import Lab
from .specs import CheckSerializer, QuickFixSerializer, StrictSerializer

MAX_FILE_BYTES = 256 * 1024  # the largest built-in lab is ~12 kB
MAX_DEPTH = 10  # a state in a quick fix sits 9 levels down: lab, sections, section, steps, step, fixes, fix, states
MAX_SECTIONS = 30
MAX_STEPS = 40  # per section
MAX_QUICK_FIXES = 20
MAX_TEXT = 20_000  # characters of Markdown in a step's instructions or the lab's summary
TOP_KEYS = ("slug", "title", "summary", "sections")
SECTION_KEYS = ("title", "minutes", "steps")
STEP_KEYS = ("title", "instructions", "template", "preset", "fixed", "check", "quick_fixes")


class LabFileInvalid(ValueError):
    """What is wrong with a lab file: the message, and each problem on its own (`problems`) for a page to list."""

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = problems or [message]


class StepFileSerializer(StrictSerializer):
    title = serializers.CharField(max_length=200)
    instructions = serializers.CharField(allow_blank=True, required=False, default="", max_length=MAX_TEXT)
    template = serializers.SlugField(required=False)
    preset = serializers.DictField(required=False, default=dict)
    fixed = serializers.ListField(child=serializers.CharField(max_length=64), required=False, default=list)
    check = CheckSerializer(required=False)
    quick_fixes = QuickFixSerializer(many=True, required=False, default=list, max_length=MAX_QUICK_FIXES)  # type: ignore[call-arg]

    def validate_preset(self, preset: dict) -> dict:
        shaped = [name for name, value in preset.items() if isinstance(value, dict | list) or value is None]
        if shaped:
            raise serializers.ValidationError(f"Give each value as a single number, word or true/false: {shaped[0]}.")
        return preset

    def validate(self, attrs):
        loose = [name for name in attrs["fixed"] if name not in attrs["preset"]]
        if loose:
            raise serializers.ValidationError(f"Fixed values need a preset: {', '.join(loose)}.")
        if attrs.get("check", {}).get("kind", "answer") != "answer" and "template" not in attrs:
            raise serializers.ValidationError("A step whose check reads runs names the template it runs.")
        return attrs


class SectionFileSerializer(StrictSerializer):
    title = serializers.CharField(max_length=200)
    minutes = serializers.IntegerField(min_value=0, max_value=24 * 60)
    steps = StepFileSerializer(many=True, allow_empty=False, max_length=MAX_STEPS)  # type: ignore[call-arg]


class LabFileSerializer(StrictSerializer):
    slug = serializers.SlugField(max_length=50)
    title = serializers.CharField(max_length=200)
    summary = serializers.CharField(allow_blank=True, required=False, default="", max_length=MAX_TEXT)
    sections = SectionFileSerializer(many=True, allow_empty=False, max_length=MAX_SECTIONS)  # type: ignore[call-arg]


def checked(definition: Any) -> dict:
    """The definition as validated data, or LabFileInvalid naming each problem where it is."""
    if not isinstance(definition, dict):
        raise LabFileInvalid("A lab file is a mapping with slug, title, summary and sections (see a built-in lab).")
    data = LabFileSerializer(data=definition)
    if not data.is_valid():
        where = definition.get("slug") if isinstance(definition.get("slug"), str) else "The lab"
        problems = describe(data.errors, definition)
        raise LabFileInvalid(f"{where}: " + " ".join(problems), problems)
    return dict(data.validated_data)


def describe(errors: Any, definition: Any, path: tuple = ()) -> list[str]:
    """DRF's nested errors as sentences, each led by where it is: "Section 1 “Start”, step 2 “Run”, check: …"."""
    if isinstance(errors, dict):
        return [line for key, inner in errors.items() for line in describe(inner, definition, (*path, key))]
    if isinstance(errors, list) and errors and not all(isinstance(e, str) for e in errors):
        return [line for i, inner in enumerate(errors) if inner for line in describe(inner, definition, (*path, i))]
    messages = [str(e) for e in (errors if isinstance(errors, list) else [errors])]
    where = _where(path, definition)
    return [f"{where}: {message}" if where else message for message in messages]


def _where(path: tuple, definition: Any) -> str:
    parts, node = [], definition
    for i, key in enumerate(path):
        if key == "non_field_errors":
            continue
        node = _child(node, key)
        parent = path[i - 1] if i else None
        if parent in ("sections", "steps") and isinstance(key, int):
            title = node.get("title") if isinstance(node, dict) else None
            label = {"sections": "Section", "steps": "step"}[parent]
            parts.append(f"{label} {key + 1}" + (f" “{title}”" if isinstance(title, str) else ""))
        elif parent == "quick_fixes" and isinstance(key, int):
            parts.append(f"quick fix {key + 1}")
        elif key not in ("sections", "steps", "quick_fixes") and not isinstance(key, int):
            parts.append(str(key))
        elif isinstance(key, int):
            parts.append(f"item {key + 1}")
    return ", ".join(parts)


def _child(node: Any, key: Any) -> Any:
    if isinstance(node, dict):
        return node.get(key)
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    return None


class _PlainLoader(yaml.SafeLoader):
    """The safe loader, refusing anchors and aliases and any nesting deeper than a lab file has."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            said = "Anchors and aliases (&name, *name) are not allowed: write each value out."
            raise yaml.composer.ComposerError(None, None, said, self.peek_event().start_mark)
        depth = getattr(self, "_depth", 0)
        if depth >= MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"Nested deeper than a lab file goes ({MAX_DEPTH} levels).", self.peek_event().start_mark
            )
        self._depth = depth + 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth = depth


def parse(text: str | bytes) -> Any:
    """The YAML text as plain data, or LabFileInvalid saying what to change."""
    size = len(text.encode() if isinstance(text, str) else text)
    if size > MAX_FILE_BYTES:
        raise LabFileInvalid(f"The file is {size // 1024} kB; a lab file is at most {MAX_FILE_BYTES // 1024} kB.")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise LabFileInvalid("The file is not UTF-8 text: save it as UTF-8 YAML.") from None
    try:
        return yaml.load(text, Loader=_PlainLoader)  # noqa: S506 (a SafeLoader, narrowed further)
    except yaml.constructor.ConstructorError as exc:
        tag = f" {exc.problem.split('tag ', 1)[-1]}" if exc.problem and "tag" in exc.problem else ""
        raise LabFileInvalid(f"Only plain YAML is read: remove the tag{tag}{_line(exc)}.") from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        raise LabFileInvalid(f"This is not a lab file's YAML: {problem}{_line(exc)}.") from None


def _line(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    return f" (line {mark.line + 1})" if mark is not None else ""


def definition_of(lab: Lab) -> dict:
    """The lab as the data its file holds, in the built-in labs' order of keys; empty parts left out."""
    sections = []
    for section in lab.sections.prefetch_related("steps__template").order_by("position"):
        steps = [_step_definition(step) for step in section.steps.all()]
        sections.append({"title": section.title, "minutes": section.planned_minutes, "steps": steps})
    return {"slug": lab.slug, "title": lab.title, "summary": lab.summary, "sections": sections}


def _step_definition(step) -> dict:
    data: dict[str, Any] = {"title": step.title}
    if step.instructions:
        data["instructions"] = step.instructions
    if step.template is not None:
        data["template"] = step.template.slug
    if step.preset:
        data["preset"] = dict(step.preset)
    if step.fixed:
        data["fixed"] = list(step.fixed)
    if step.check_spec:
        data["check"] = dict(step.check_spec)
    if step.quick_fixes:
        data["quick_fixes"] = [dict(fix) for fix in step.quick_fixes]
    return data


class _FileDumper(yaml.SafeDumper):
    """Multi-line text as a block (|), as the built-in files write instructions."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_FileDumper.add_representer(str, _text)


def dump(definition: dict) -> str:
    return yaml.dump(definition, Dumper=_FileDumper, sort_keys=False, allow_unicode=True, width=120)
