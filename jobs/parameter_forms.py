"""The template editor's parameters as rows of fields (one per parameter), not JSON.

Each row is checked with the parameter grammar of core.templating.params, and its errors are put on the row's own
fields; the rows become the same JSON list the API and the renderers read. Plain HTML: a blank row at the end adds a
parameter, "Add a parameter" and the move buttons post the form back (authoring views), Remove drops a row on save.
"""

from __future__ import annotations

import re
from typing import Any, cast

from django import forms
from django.forms import formset_factory
from django.forms.formsets import DELETION_FIELD_NAME

from core.templating.params import (
    DEFAULT_STRING_LENGTH,
    FLOAT_TEXT,
    INT_TEXT,
    MAX_STRING_LENGTH,
    TYPES,
    SchemaError,
    parse_schema,
)

PREFIX = "params"
MAX_PARAMETERS = 40
ROW_FIELDS = (
    "name",
    "type",
    "label",
    "help",
    "default",
    "min",
    "max",
    "choices",
    "max_length",
    "pattern",
    "pattern_help",
    "in_files",
)
TRUE_WORDS, FALSE_WORDS = {"true", "1", "on", "yes"}, {"false", "0", "off", "no", ""}
# Which keys each type keeps; a field of another type is ignored (the page hides it where the browser can).
TYPE_KEYS = {
    "int": {"min", "max"},
    "float": {"min", "max"},
    "choice": {"choices"},
    "bool": set(),
    "string": {"max_length", "pattern", "pattern_help", "in_files"},
}


class _RowError(Exception):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def _number(field: str, text: str) -> int | float:
    text = text.strip()
    if INT_TEXT.fullmatch(text):
        return int(text)
    if FLOAT_TEXT.fullmatch(text):
        return float(text)
    raise _RowError(field, "Enter a number such as 2, 0.5 or 3e-4, with the digits 0-9.")


def _text(value: Any) -> str:
    """A schema value as the row shows it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class ParameterForm(forms.Form):
    name = forms.CharField(max_length=40, help_text="Written {{ name }} in the body; lower-case, digits, _.")
    type = forms.ChoiceField(choices=[(t, t) for t in TYPES], initial="int")
    label = forms.CharField(max_length=100, required=False, help_text="What the launch form calls it.")
    help = forms.CharField(max_length=500, required=False, help_text="A sentence under the field.")
    default = forms.CharField(
        max_length=MAX_STRING_LENGTH, required=False, help_text="bool: true or false; choice: one of the choices."
    )
    min = forms.CharField(max_length=40, required=False, label="Minimum", help_text="int and float.")
    max = forms.CharField(max_length=40, required=False, label="Maximum", help_text="int and float.")
    choices = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="choice: one per line (leave empty for partition or gpu_type: the cluster's own).",
    )
    max_length = forms.IntegerField(
        min_value=1,
        max_value=MAX_STRING_LENGTH,
        required=False,
        label="Max length",
        help_text=f"string; {DEFAULT_STRING_LENGTH} when empty.",
    )
    pattern = forms.CharField(max_length=300, required=False, help_text="string: a regular expression it must match.")
    pattern_help = forms.CharField(
        max_length=300, required=False, label="Pattern help", help_text="string: what the pattern allows, in words."
    )

    in_files = forms.BooleanField(
        required=False,
        label="A file in the student's Files",
        help_text="string: a path in the student's Files space; the launch checks the file is there and readable.",
    )

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            self.item = self._item(self.cleaned_data)
            parse_schema([self.item])
        except _RowError as error:
            self.add_error(error.field, str(error))
        except SchemaError as error:
            self.add_error(error.field if error.field in self.fields else None, error.detail)
        return data

    def _item(self, data: dict) -> dict:
        kind = data["type"]
        item: dict[str, Any] = {"name": data["name"], "type": kind}
        for key in ("label", "help", "pattern", "pattern_help"):
            if data[key] and (key not in TYPE_KEYS["string"] or kind == "string"):
                item[key] = data[key]
        item["default"] = self._default(kind, data["default"])
        keys = TYPE_KEYS[kind]
        for key in ("min", "max"):
            if key in keys and data[key]:
                item[key] = _number(key, data[key])
        if "choices" in keys:
            item["choices"] = [line.strip() for line in data["choices"].splitlines() if line.strip()]
        if "max_length" in keys and data["max_length"] is not None:
            item["max_length"] = data["max_length"]
        if "in_files" in keys and data["in_files"]:
            item["in_files"] = True
        return item

    @staticmethod
    def _default(kind: str, text: str):
        if kind in ("int", "float"):
            if not text.strip():
                raise _RowError("default", "A number parameter needs a default.")
            return _number("default", text)
        if kind == "bool":
            if text.strip().lower() not in TRUE_WORDS | FALSE_WORDS:
                raise _RowError("default", "Enter true or false.")
            return text.strip().lower() in TRUE_WORDS
        return text


def _removed(form: forms.Form) -> bool:
    """Is the row's Remove ticked (as the formset itself reads it, from what was cleaned)?"""
    return bool(getattr(form, "cleaned_data", {}).get(DELETION_FIELD_NAME))


class BaseParameterFormSet(forms.BaseFormSet):
    def add_fields(self, form, index):
        super().add_fields(form, index)
        form.fields["ORDER"].label = "Position"
        form.fields["ORDER"].widget.attrs["class"] = "small-number"
        form.fields["DELETE"].label = "Remove"

    def clean(self):
        if any(self.errors):
            return
        seen: set[str] = set()
        for form in self.forms:
            name = getattr(form, "cleaned_data", {}).get("name")
            if name is None or _removed(form):
                continue
            if name in seen:
                form.add_error("name", f"Another parameter is already named {name}.")
            seen.add(name)

    def parameters(self) -> list[dict]:
        """The rows as the schema's JSON list, in their order."""
        return [form.item for form in self.ordered_forms]

    def messages(self) -> list[str]:
        """Every row's errors as sentences naming the row (the preview lists them)."""
        found = [str(error) for error in self.non_form_errors()]
        for index, form in enumerate(self.forms, start=1):
            if self.can_delete and _removed(form):
                continue
            name = form["name"].value() or f"row {index}"
            for field, errors in form.errors.items():
                where = "" if field == "__all__" else f" {form.fields[field].label or field}"
                found += [f"Parameter {name}{where}: {error}" for error in errors]
        return found


# formset_factory is typed as returning a plain BaseFormSet; the class it makes is a BaseParameterFormSet
ParameterFormSet = cast(
    type[BaseParameterFormSet],
    formset_factory(
        ParameterForm,
        formset=BaseParameterFormSet,
        extra=1,
        can_order=True,
        can_delete=True,
        max_num=MAX_PARAMETERS,
        validate_max=True,
    ),
)


def rows_of(parameters: list[dict]) -> list[dict]:
    """The schema's JSON as the rows' initial values."""
    rows = []
    for item in parameters if isinstance(parameters, list) else ():
        texts = (key for key in ROW_FIELDS if key not in ("choices", "max_length", "in_files"))
        row: dict[str, Any] = {key: _text(item.get(key)) for key in texts}
        row["in_files"] = item.get("in_files") is True
        row["choices"] = "\n".join(str(c) for c in item.get("choices") or ())
        row["max_length"] = item.get("max_length")
        rows.append(row)
    return rows


MOVE = re.compile(r"(up|down)-(\d+)")


def rearranged(data, action: str):
    """The rows as posted, shown again (unbound, unchecked) after "Add a parameter" or a move ("up-3": the row posted
    as number 3): in the order their positions say, removed ones gone, one more blank row for "add"."""
    posted = ParameterFormSet(data, prefix=PREFIX)
    rows, blanks = [], 0
    for index, form in enumerate(posted.forms):
        row = {key: form[key].value() or "" for key in ROW_FIELDS}
        if form["DELETE"].value():
            continue
        if not any(str(value).strip() for key, value in row.items() if key != "type"):
            blanks += 1
            continue
        position = str(form["ORDER"].value() or "")
        rows.append((int(position) if position.isdigit() else 10**6, index, row))
    rows.sort(key=lambda entry: entry[:2])
    move = MOVE.fullmatch(action)
    at = next((i for i, entry in enumerate(rows) if move and entry[1] == int(move.group(2))), None)
    if move is not None and at is not None:
        to = at - 1 if move.group(1) == "up" else at + 1
        if 0 <= to < len(rows):
            rows[at], rows[to] = rows[to], rows[at]
    formset = ParameterFormSet(initial=[row for _, _, row in rows], prefix=PREFIX)
    formset.extra = blanks + 1 if action == "add" else max(blanks, 1)
    return formset
