"""templates: what the user may launch now, and each template's parameters."""

from __future__ import annotations

import click

from .. import context
from ..client import JSONObject, Portal
from ..output import emit_json, fields, note, output_option, table

# The portal's Template fields shown here; tests/test_cli_vocabulary.py checks them against the API schema.
LIST_COLUMNS = (("TEMPLATE", "slug"), ("NAME", "name"), ("BACKEND", "backend"), ("COURSES", "courses"))
DETAIL_FIELDS = (
    ("Template", "slug"),
    ("Name", "name"),
    ("Backend", "backend"),
    ("Courses", "courses"),
    ("Description", "description"),
    ("Minutes at most", "max_minutes"),
    ("GPUs at most", "max_gpus"),
)


def complete_template(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of template slugs; says nothing when the portal cannot be asked."""
    try:
        portal = context.portal()
        return [t["slug"] for t in portal.each("/templates/") if t["slug"].startswith(incomplete)]
    except Exception:  # completion must never print a traceback into the user's shell
        return []


@click.command(
    epilog="""\b
Examples:
  gpulab templates
  gpulab templates sleep-echo          # its parameters, their defaults and bounds
  gpulab templates --course hpc -o json"""
)
@click.argument("slug", required=False, shell_complete=complete_template)
@click.option("--course", help="Only the templates of the course with this slug.")
@output_option
def templates(slug: str | None, course: str | None, output: str) -> None:
    """The templates you may launch now; with SLUG, that template's parameters."""
    portal = context.portal()
    if slug:
        show_template(portal, slug, output)
        return
    offered = list(portal.each("/templates/", course=course))
    if output == "json":
        emit_json(offered)
        return
    if not offered:
        note("No template is offered to you now.")
        return
    rows = ([*(t[field] for _, field in LIST_COLUMNS), [p["name"] for p in t["parameters"]]] for t in offered)
    table([*(title for title, _ in LIST_COLUMNS), "PARAMETERS"], rows)


def show_template(portal: Portal, slug: str, output: str) -> None:
    template = portal.get(f"/templates/{slug}/")
    if output == "json":
        emit_json(template)
        return
    fields((label, template[field]) for label, field in DETAIL_FIELDS)
    rows = ([p["name"], p["type"], p.get("default"), allowed(p), p.get("label")] for p in template["parameters"])
    table(["PARAMETER", "TYPE", "DEFAULT", "ALLOWED", "LABEL"], rows)
    note(f"Launch it with: gpulab launch {template['slug']} -p NAME=VALUE …")


def allowed(parameter: JSONObject) -> str:
    if parameter.get("choices"):
        return " | ".join(map(str, parameter["choices"]))
    low, high = parameter.get("min"), parameter.get("max")
    if low is not None or high is not None:
        return f"{'' if low is None else low}..{'' if high is None else high}"
    if parameter.get("max_length"):
        return f"up to {parameter['max_length']} characters"
    return ""
