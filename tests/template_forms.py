"""The template editor's form as a browser posts it, for tests that author templates through the pages."""

from __future__ import annotations

import json


def editor_data(course, *, params: list[dict], action: str = "save", **fields) -> dict:
    """POST data for the editor: `fields` are the template's own (name, slug, body, …), `params` its schema."""
    data = {
        "action": action,
        "name": "My training",
        "slug": "my-train",
        "description": "",
        "backend": "slurm",
        "courses": [course.pk],
        "body": "echo hi",
        "max_gpus": 1,
        "max_nodes": 1,
        "max_minutes": 10,
        **fields,
    }
    data["parameters"] = json.dumps(params)
    return data


def editor_data_of(template, course, *, action: str = "save", **changes) -> dict:
    """The editor's POST for `template` as it stands, with `changes`."""
    own = {f: getattr(template, f) for f in ("name", "slug", "description", "backend", "body", "endpoint_api")}
    limits = {f: getattr(template, f) for f in ("max_gpus", "max_nodes", "max_minutes")}
    params = changes.pop("params", template.parameters)
    return editor_data(course, params=params, action=action, **{**own, **limits, **changes})
