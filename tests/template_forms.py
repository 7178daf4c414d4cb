"""The template editor's form as a browser posts it, for tests that author templates through the pages."""

from __future__ import annotations

from jobs.parameter_forms import PREFIX, rows_of


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
    data.update(parameter_rows(params))
    return data


def parameter_rows(params: list[dict], *, blank_row: bool = True) -> dict:
    """The parameter rows' fields as the editor posts them, one row per parameter plus the blank row."""
    rows = rows_of(params)
    data = {f"{PREFIX}-TOTAL_FORMS": len(rows) + blank_row, f"{PREFIX}-INITIAL_FORMS": len(rows)}
    for index, row in enumerate(rows):
        data.update({f"{PREFIX}-{index}-{key}": "" if value is None else value for key, value in row.items()})
        data[f"{PREFIX}-{index}-ORDER"] = index + 1
    if blank_row:
        data[f"{PREFIX}-{len(rows)}-type"] = "int"
    return data


def editor_data_of(template, course, *, action: str = "save", **changes) -> dict:
    """The editor's POST for `template` as it stands, with `changes`."""
    own = {f: getattr(template, f) for f in ("name", "slug", "description", "backend", "body", "endpoint_api")}
    limits = {f: getattr(template, f) for f in ("max_gpus", "max_nodes", "max_minutes")}
    params = changes.pop("params", template.parameters)
    return editor_data(course, params=params, action=action, **{**own, **limits, **changes})
