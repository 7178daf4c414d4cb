"""The templates shipped with the portal (jobs/builtin_templates/*.yaml), loaded as data."""

from __future__ import annotations

from pathlib import Path

import yaml
from django.db import transaction
from django.utils import timezone

from .authoring import preview
from .models import JobTemplate

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin_templates"
FIELDS = (
    "name",
    "description",
    "backend",
    "body",
    "parameters",
    "max_gpus",
    "max_nodes",
    "max_minutes",
    "endpoint_api",
    "session",
)


def builtin_definitions() -> list[dict]:
    return [yaml.safe_load(path.read_text()) for path in sorted(BUILTIN_DIR.glob("*.yaml"))]


@transaction.atomic
def load_builtin_templates(courses=(), *, publish: bool = True) -> list[JobTemplate]:
    """Create or update every built-in template, attach it to `courses`, and publish it if it checks out."""
    loaded = []
    for definition in builtin_definitions():
        checked = preview(definition["body"], definition["parameters"], backend=definition.get("backend"))
        if not checked.ok:
            raise ValueError(f"Built-in template {definition['slug']} is broken: {'; '.join(checked.errors)}")
        template, _ = JobTemplate.objects.update_or_create(
            slug=definition["slug"], defaults={**{f: definition.get(f, "") for f in FIELDS}, "builtin": True}
        )
        if publish and template.status == JobTemplate.Status.DRAFT:
            template.status, template.published_at = JobTemplate.Status.PUBLISHED, timezone.now()
            template.save(update_fields=["status", "published_at"])
        template.courses.add(*courses)
        loaded.append(template)
    return loaded
