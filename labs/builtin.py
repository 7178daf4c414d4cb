"""The built-in labs: data files (labs/builtin_labs/*.yaml, written from the seed handouts) read with the lab file
reader (labs/lab_files.py) and loaded into a course idempotently: loading again updates the text, presets and checks
in place and keeps the students' answers and what their logs were found to hold (labs/loading.py)."""

from __future__ import annotations

from pathlib import Path

from courses.models import Course

from . import lab_files
from .lab_files import LabFileInvalid, checked
from .loading import load_lab
from .models import Lab

__all__ = ["BUILTIN_DIR", "LabFileInvalid", "builtin_definitions", "checked", "load_builtin_lab", "load_lab"]

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin_labs"


def builtin_definitions() -> dict[str, dict]:
    definitions = [lab_files.parse(path.read_text()) for path in sorted(BUILTIN_DIR.glob("*.yaml"))]
    return {d["slug"]: d for d in definitions}


def load_builtin_lab(course: Course, slug: str) -> Lab:
    definition = builtin_definitions().get(slug)
    if definition is None:
        raise LabFileInvalid(f"There is no built-in lab “{slug}”.")
    return load_lab(course, definition, builtin=slug)
