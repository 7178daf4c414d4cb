"""Instructor template authoring: preview with the defaults, and publishing only what renders and parses.

The checks are the kind's (clusters/backends/<kind>/): a batch script is published only if every placeholder
passes the bash context checker (script_safety), each refusal its own preview error naming the line, the context
and the fix; Kubernetes objects only if they are checked and validated.
"""

from __future__ import annotations

from clusters import kinds
from clusters.backends.kind import Preview

from .models import JobTemplate

__all__ = ["Preview", "preview", "preview_template", "publish"]


def preview(body: str, parameters, cluster=None, backend: str | None = None) -> Preview:
    """What the defaults render to, checked the way the kind that runs `backend` templates checks them
    (default: the templates a new JobTemplate is written for)."""
    backend = backend or kinds.default_templates()
    return kinds.kind_of(backend).preview(body, parameters, cluster)


def preview_template(template: JobTemplate) -> Preview:
    cluster = next((c for course in template.courses.all() for c in course.clusters.all()), None)
    return preview(template.body, template.parameters, cluster, template.backend)


def publish(template: JobTemplate) -> Preview:
    """Publish if the template renders with its defaults and passes bash -n; the preview says why not."""
    result = preview_template(template)
    if result.ok:
        JobTemplate.objects.filter(pk=template.pk).update(status=JobTemplate.Status.PUBLISHED)
        template.status = JobTemplate.Status.PUBLISHED
    return result
