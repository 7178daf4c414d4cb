"""Instructor template authoring: preview with the defaults, and publishing only what renders and parses.

A SLURM body is published only if every placeholder passes the bash context checker (script_safety): each
refusal is its own preview error naming the line, the context and the fix.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from clusters.backends.kubernetes.manifests import ManifestError, dump, preview_context, render_manifests
from clusters.models import ClusterKind

from .models import JobTemplate
from .params import SchemaError, parse_schema
from .rendering import RenderContext, RenderError, bash_syntax_error, placeholder_problems, render_script, unix_lines
from .script_safety import PLACEHOLDER

PREVIEW_JOB_ID = uuid.UUID(int=0)


@dataclass
class Preview:
    script: str = ""
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def preview(body: str, parameters, cluster=None, backend: str = ClusterKind.SLURM) -> Preview:
    """What the defaults render to: a script checked with bash -n, or Kubernetes objects checked and validated."""
    result = Preview()
    try:
        schema = parse_schema(parameters)
    except SchemaError as exc:
        result.errors.append(str(exc))
        return result
    values = {p.name: p.default for p in schema}
    if backend == ClusterKind.KUBERNETES:
        try:
            result.script = dump(render_manifests(body, schema, values, preview_context()))
        except ManifestError as exc:
            result.errors.append(str(exc))
        return result
    refused = placeholder_problems(body, schema)
    if refused:
        syntax = bash_syntax_error(PLACEHOLDER.sub("x", unix_lines(body)))  # a syntax error explains the refusals best
        result.errors.extend([f"bash -n: {syntax}"] if syntax else refused)
        return result
    ctx = RenderContext(
        job_id=str(PREVIEW_JOB_ID),
        job_name="gpulab-preview",
        lab_dir=cluster.lab_dir if cluster else "~/gpulab",
        preamble=cluster.preamble if cluster else "",
    )
    try:
        result.script = render_script(body, schema, values, ctx)
    except RenderError as exc:
        result.errors.append(str(exc))
        return result
    syntax = bash_syntax_error(result.script)
    if syntax:
        result.errors.append(f"bash -n: {syntax}")
    return result


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
