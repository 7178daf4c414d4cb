"""Settings a kind owns, kept on the shared rows as plain JSON: no column, no migration and no admin edit per setting.

A kind declares its settings as a frozen dataclass (a KindSettings subclass) whose fields are made with `setting()`:
the Django form field that validates the value and draws it in forms, the default, whether Test connection detects
it (shown, never typed) and how a clusters.d file names it. The rows hold what was validated:

- Cluster.kind_settings: the settings of the cluster's kind ({name: value});
- Course.kind_settings: {kind name: that kind's settings of the course}, since a course's clusters may be of several
  kinds.

A kind reads its own through its class, typed: `KubernetesClusterSettings.of(cluster.kind_settings)`. Anything
outside the kind asks the Kind (clusters/backends/kind.py), never the JSON.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import format_html
from django.utils.text import capfirst


def setting(
    formfield: forms.Field,
    default: Any = None,
    *,
    detected: bool = False,
    file_key: str = "",
    describe: Callable[[Any], str] | None = None,
) -> Any:
    """One setting: `formfield` validates it and draws it; `detected` ones are learnt by Test connection and shown
    as `describe(value)` words; `file_key` is where a clusters.d file gives it ("job.context"), "" for nowhere."""
    meta = {"formfield": formfield, "detected": detected, "file_key": file_key, "describe": describe}
    if isinstance(default, dict | list):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


class Described(forms.Widget):
    """A detected setting on a form: its value in words, never an input (the field is disabled, so a posted value is
    ignored and the stored one kept)."""

    def __init__(self, describe: Callable[[Any], str]):
        super().__init__()
        self.describe = describe

    def render(self, name, value, attrs=None, renderer=None):
        return format_html('<div class="readonly">{}</div>', self.describe(value))


@dataclasses.dataclass(frozen=True)
class KindSettings:
    """A kind's settings of one row. This base declares none: a kind without settings of its own uses it."""

    @classmethod
    def of(cls, stored: Mapping[str, Any] | None) -> Self:
        """The settings a row holds, each missing one at its default; keys the kind no longer declares are left."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{name: value for name, value in (stored or {}).items() if name in known})

    @classmethod
    def names(cls, *, detected: bool | None = None) -> list[str]:
        """The declared names, in order: all of them, or only the detected (True) or typed (False) ones."""
        return [f.name for f in dataclasses.fields(cls) if detected is None or f.metadata["detected"] == detected]

    @classmethod
    def form_fields(cls) -> dict[str, forms.Field]:
        """A fresh form field per setting, each with its default as the initial value; the detected ones disabled
        and shown in words."""
        fields = {}
        for f in dataclasses.fields(cls):
            field = copy.deepcopy(f.metadata["formfield"])
            if f.metadata["detected"]:  # the value as stored, in words: no input, nothing taken from a post
                declared = field
                field = forms.Field(required=False, disabled=True, widget=Described(f.metadata["describe"] or str))
                field.label, field.help_text = declared.label, declared.help_text
            field.initial = _default(f)
            field.label = capfirst(field.label) if field.label else field.label  # as a model field's label reads
            fields[f.name] = field
        return fields

    @classmethod
    def file_keys(cls) -> dict[str, str]:
        """{clusters.d key: setting name} for the settings a cluster file may give."""
        return {f.metadata["file_key"]: f.name for f in dataclasses.fields(cls) if f.metadata["file_key"]}

    @classmethod
    def clean(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """`values` validated by each setting's form field, as JSON; ValidationError names each wrong one (and any
        name the kind does not declare)."""
        declared = {f.name: f for f in dataclasses.fields(cls)}
        cleaned, errors = {}, {}
        for name, value in values.items():
            if name not in declared:
                errors[name] = [f"This kind has no setting {name}."]
                continue
            try:
                cleaned[name] = declared[name].metadata["formfield"].clean(value)
            except ValidationError as exc:
                errors[name] = exc.messages
        if errors:
            raise ValidationError(errors)
        return cleaned

    def describe(self, name: str) -> str:
        """A detected setting's value in words."""
        f = next(f for f in dataclasses.fields(self) if f.name == name)
        return (f.metadata["describe"] or str)(getattr(self, name))

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _default(f: dataclasses.Field) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def settings_form_fields(owners: Iterable[type[KindSettings]], *, detected: bool = True) -> dict[str, forms.Field]:
    """The form fields of these kinds' settings (a name two kinds share, once), for a form that shows them; without
    the detected ones where nothing has been detected yet (a new row)."""
    fields: dict[str, forms.Field] = {}
    for owner in owners:
        for name, field in owner.form_fields().items():
            if detected or not field.disabled:
                fields.setdefault(name, field)
    return fields
