"""Typed job-template parameters: the schema, its validation, and validation of submitted values.

A template's `parameters` is a list of objects like
    {"name": "epochs", "type": "int", "label": "Epochs", "default": 1, "min": 1, "max": 20, "help": "…"}
Types: int and float (min/max), choice (choices), bool, string (pattern with pattern_help, max_length).
A pattern's error says pattern_help, what it allows in words; never the regular expression itself.
Every parameter needs a default that passes its own checks, so a template can always be previewed.

`sweep` marks a parameter a student may sweep (sweeps/): `true` offers every value the parameter accepts (an int or
float within its min and max, every choice, both bools); a list offers only those values, each checked like a value
the student typed. Strings cannot be swept (offer the values as a choice).

A string value always matches SAFE_STRING (letters, digits and . _ - / : , + = @ %, not starting with - or +):
no character bash gives a meaning to, so a value stays inert even where a template misuses it. An instructor's
own pattern only narrows that: a value must match both (checked when the value is validated), so no pattern
can let a shell character through.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .resources import RESOURCES

NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
TYPES = ("int", "float", "choice", "bool", "string")
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
# Numbers as text: ASCII digits only (int() and float() would also take "٢", " 2 " and "1_0").
# Up to 100 digits: a longer number is refused as out of range, not as a wrong kind of text.
INT_TEXT = re.compile(r"[+-]?[0-9]{1,100}")
FLOAT_TEXT = re.compile(r"[+-]?([0-9]{1,100}(\.[0-9]{0,100})?|\.[0-9]{1,100})([eE][+-]?[0-9]{1,3})?")
MAX_STRING_LENGTH = 256
MAX_SWEEP_VALUES = 20  # values one swept parameter may offer or take
SWEEPABLE_TYPES = ("int", "float", "choice", "bool")
DEFAULT_STRING_LENGTH = 64
SAFE_STRING = re.compile(r"(?![-+])[A-Za-z0-9_.,:/+=@%-]*")
SAFE_STRING_HELP = (
    "Use only letters, digits and . _ - / : , + = @ % (no spaces, quotes or other shell characters), "
    "not starting with - or +."
)

PATTERN_FALLBACK = "This value is not in the form this field asks for: see the help above it."

# Placeholders the portal fills itself (rendering.py): no parameter may take their names.
BUILTIN_PLACEHOLDERS = ("lab_dir", "job_id")
# Choices left empty in the schema are filled from the cluster (its partitions, its GPU types).
CLUSTER_CHOICES = {"partition": "partitions", "gpu_type": "gpu_types"}


class SchemaError(ValueError):
    """The template's parameter schema is malformed; the message says where. `field`: the key at fault (name, type,
    default, min, …) where there is one; `detail`: the message without the parameter it names, for that field."""

    def __init__(self, message: str, *, field: str | None = None, where: str = ""):
        super().__init__(message)
        self.field = field
        rest = message[len(where) :] if where and message.startswith(where) else ": " + message
        self.detail = rest[2:3].upper() + rest[3:] if rest.startswith(": ") else "This parameter" + rest


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    label: str
    default: Any
    help: str = ""
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = field(default_factory=tuple)
    pattern: str | None = None
    pattern_help: str = ""  # "A path inside your Files space, such as data/notes.txt": the pattern's error
    max_length: int = DEFAULT_STRING_LENGTH
    in_files: bool = False  # a path in the launching user's Files space: checked at launch where the kind can
    sweep: bool = False  # a student may sweep it (sweeps/)
    sweep_values: tuple[Any, ...] = ()  # the only values a sweep may take; empty: any value clean() accepts

    @property
    def cluster_choices(self) -> str | None:
        """The Cluster field that supplies this choice's options, when the schema leaves them empty."""
        return CLUSTER_CHOICES.get(self.name) if self.type == "choice" and not self.choices else None

    def clean(self, raw: Any, choices: tuple[str, ...] | None = None) -> Any:
        """The typed value, or ValueError with a message for the form field."""
        if self.type == "bool":
            if isinstance(raw, bool):
                return raw
            if str(raw).strip().lower() in {"true", "1", "on", "yes"}:
                return True
            if str(raw).strip().lower() in {"false", "0", "off", "no", ""}:
                return False
            raise ValueError("Enter true or false.")
        if raw is None or (isinstance(raw, str) and not raw.strip() and self.type != "string"):
            raise ValueError("This field is required.")
        if self.type == "int":
            return self._bounded(self._to_int(raw, self._example()))
        if self.type == "float":
            return self._bounded(self._to_float(raw, self._example()))
        text = raw if isinstance(raw, str) else str(raw)
        if CONTROL_CHARS.search(text):
            raise ValueError("Line breaks, tabs and other control characters are not allowed.")
        if self.type == "choice":
            allowed = choices if choices is not None else self.choices
            if text not in allowed:
                listed = ", ".join(allowed) or "(none available on this cluster)"
                raise ValueError(f"Choose one of: {listed}.")
            return text
        if len(text) > self.max_length:
            raise ValueError(f"At most {self.max_length} characters.")
        if self.pattern and not re.fullmatch(self.pattern, text):
            raise ValueError(self.pattern_help or PATTERN_FALLBACK)
        if not SAFE_STRING.fullmatch(text):
            raise ValueError(SAFE_STRING_HELP)
        return text

    def _example(self) -> str:
        """What to type, from this field's own bounds and default: an example the field itself would accept."""
        bounds = ""
        if self.min is not None and self.max is not None:
            bounds = f" from {_fmt(self.min)} to {_fmt(self.max)}"
        elif self.min is not None:
            bounds = f" of at least {_fmt(self.min)}"
        elif self.max is not None:
            bounds = f" of at most {_fmt(self.max)}"
        example = self.default if isinstance(self.default, int | float) and not isinstance(self.default, bool) else None
        if example is None:
            example = next((b for b in (self.min, self.max) if b is not None), 2 if self.type == "int" else 0.5)
        return f"{bounds}, e.g. {_fmt(example)}"

    @staticmethod
    def _to_int(raw: Any, example: str) -> int:
        if isinstance(raw, bool):
            raise ValueError("Enter a whole number.")
        if isinstance(raw, int):
            return raw
        if isinstance(raw, float) and raw.is_integer():
            return int(raw)
        if not isinstance(raw, str) or not INT_TEXT.fullmatch(raw):
            raise ValueError(f"Enter a whole number with the digits 0-9 (no spaces){example}.")
        return int(raw)

    @staticmethod
    def _to_float(raw: Any, example: str) -> float:
        if isinstance(raw, bool):
            raise ValueError("Enter a number.")
        if isinstance(raw, int | float) or (isinstance(raw, str) and FLOAT_TEXT.fullmatch(raw)):
            value = float(raw)
        else:
            raise ValueError(f"Enter a number with the digits 0-9 (no spaces){example}.")
        if not math.isfinite(value):
            raise ValueError("Enter a finite number.")
        return value

    def _bounded(self, value):
        if self.min is not None and value < self.min:
            raise ValueError(f"Must be at least {_fmt(self.min)}.")
        if self.max is not None and value > self.max:
            raise ValueError(f"Must be at most {_fmt(self.max)}.")
        return value

    def as_dict(self) -> dict:
        data = {"name": self.name, "type": self.type, "label": self.label, "default": self.default, "help": self.help}
        if self.type in {"int", "float"}:
            data.update(min=self.min, max=self.max)
        if self.type == "choice":
            data["choices"] = list(self.choices)
        if self.type == "string":
            data.update(pattern=self.pattern, max_length=self.max_length)
        if self.sweep:
            data["sweep"] = list(self.sweep_values) or True
        return data

    def clean_sweep_value(self, raw: Any, choices: tuple[str, ...] | None = None) -> Any:
        """A value for a sweep of this parameter: clean(), and one of the author's sweep values where they listed
        some; ValueError says what to pick."""
        if not self.sweep:
            raise ValueError("This parameter cannot be swept.")
        value = self.clean(raw, choices)
        if self.sweep_values and value not in self.sweep_values:
            raise ValueError(f"Sweep only over: {', '.join(_fmt_value(v) for v in self.sweep_values)}.")
        return value


def _fmt(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


def _fmt_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return _fmt(value) if isinstance(value, int | float) else str(value)


def parse_schema(data: Any) -> list[Param]:
    """The schema as Params, or SchemaError naming the first problem."""
    if not isinstance(data, list):
        raise SchemaError("The parameter schema must be a list of parameter objects.")
    params: list[Param] = []
    seen: set[str] = set()
    known_keys = {"name", "type", "label", "default", "help", "min", "max", "choices", "max_length"}
    known_keys |= {"pattern", "pattern_help", "in_files", "sweep"}
    for index, item in enumerate(data, start=1):
        where = f"Parameter {index}"
        if not isinstance(item, dict):
            raise SchemaError(f"{where} must be an object.")
        name = item.get("name")
        if not isinstance(name, str) or not NAME.match(name):
            raise SchemaError(
                f"{where}: name must be lower-case letters, digits and _ (starting with a letter).",
                field="name",
                where=where,
            )
        where = f"Parameter “{name}”"
        if name in seen or name in BUILTIN_PLACEHOLDERS:
            raise SchemaError(f"{where} is defined twice or uses a reserved name.", field="name", where=where)
        seen.add(name)
        unknown = set(item) - known_keys
        if unknown:
            raise SchemaError(f"{where}: unknown keys {', '.join(sorted(unknown))}.")
        kind = item.get("type")
        if kind not in TYPES:
            raise SchemaError(f"{where}: type must be one of {', '.join(TYPES)}.", field="type", where=where)
        resource = RESOURCES.get(name)
        if resource is not None and kind != resource.type:
            raise SchemaError(
                f"{where} sets a SLURM resource and must have type {resource.type}.", field="type", where=where
            )
        param = _build(item, name, kind, where)
        if param.cluster_choices is None:
            try:
                param.clean(param.default)
            except ValueError as exc:
                raise SchemaError(
                    f"{where}: the default {param.default!r} is invalid: {exc}", field="default", where=where
                ) from None
        if "sweep" in item:
            param = _with_sweep(param, item["sweep"], where)
        params.append(param)
    return params


def _with_sweep(param: Param, marker: Any, where: str) -> Param:
    """The parameter with its sweep marker checked: true, false, or a list of the values a sweep may take."""

    def refuse(message: str) -> SchemaError:
        return SchemaError(f"{where}: {message}", field="sweep", where=where)

    if marker is False:
        return param
    if param.type not in SWEEPABLE_TYPES:
        raise refuse(f"a {param.type} parameter cannot be swept; offer its values as a choice.")
    if marker is True:
        return replace(param, sweep=True)
    if not isinstance(marker, list) or not 2 <= len(marker) <= MAX_SWEEP_VALUES:
        raise refuse(f"sweep must be true, false or a list of 2 to {MAX_SWEEP_VALUES} values.")
    values: list[Any] = []
    for raw in marker:
        if isinstance(raw, list | dict):
            raise refuse("each sweep value must be a single value.")
        try:
            value = param.clean(raw)
        except ValueError as exc:
            raise refuse(f"the sweep value {raw!r} is invalid: {exc}") from None
        if value in values:
            raise refuse(f"the sweep value {raw!r} is listed twice.")
        values.append(value)
    return replace(param, sweep=True, sweep_values=tuple(values))


def _build(item: dict, name: str, kind: str, where: str) -> Param:
    label = item.get("label") or name.replace("_", " ").capitalize()
    bounds = {}
    for key in ("min", "max"):
        value = item.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise SchemaError(f"{where}: {key} must be a number.", field=key, where=where)
        bounds[key] = value
    if bounds["min"] is not None and bounds["max"] is not None and bounds["min"] > bounds["max"]:
        raise SchemaError(f"{where}: min is greater than max.", field="min", where=where)
    choices = item.get("choices") or []
    if kind == "choice":
        if not isinstance(choices, list) or not all(isinstance(c, str) and c for c in choices):
            raise SchemaError(f"{where}: choices must be a list of non-empty strings.", field="choices", where=where)
        if not choices and name not in CLUSTER_CHOICES:
            raise SchemaError(f"{where}: a choice needs at least one option.", field="choices", where=where)
        if any(CONTROL_CHARS.search(c) for c in choices):
            raise SchemaError(f"{where}: choices may not hold control characters.", field="choices", where=where)
    pattern = item.get("pattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except (re.error, TypeError):
            raise SchemaError(
                f"{where}: pattern is not a valid regular expression.", field="pattern", where=where
            ) from None
    max_length = item.get("max_length", DEFAULT_STRING_LENGTH)
    if not isinstance(max_length, int) or not 1 <= max_length <= MAX_STRING_LENGTH:
        raise SchemaError(
            f"{where}: max_length must be between 1 and {MAX_STRING_LENGTH}.", field="max_length", where=where
        )
    if "default" not in item:
        raise SchemaError(f"{where} needs a default.", field="default", where=where)
    return Param(
        name=name,
        type=kind,
        label=str(label)[:100],
        default=item["default"],
        help=str(item.get("help") or "")[:500],
        min=bounds["min"],
        max=bounds["max"],
        choices=tuple(choices),
        pattern=pattern,
        pattern_help=str(item.get("pattern_help") or "")[:300],
        max_length=max_length,
        in_files=item.get("in_files") is True and kind == "string",
    )


def validate_values(
    schema: list[Param], raw: Mapping[str, Any], *, cluster_choices: Mapping[str, tuple[str, ...]] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """Typed values for every parameter (defaults where absent) and per-field errors."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    names = {p.name for p in schema}
    for key in raw:
        if key not in names:
            errors[key] = "This template has no such parameter."
    for param in schema:
        choices = None
        if param.cluster_choices:
            choices = tuple((cluster_choices or {}).get(param.name, ()))
        value = raw.get(param.name, param.default)
        if param.cluster_choices and param.name not in raw:
            value = param.default if param.default in (choices or ()) else (choices[0] if choices else None)
        try:
            values[param.name] = param.clean(value, choices)
        except ValueError as exc:
            errors[param.name] = str(exc)
    return values, errors


def requested_gpus(values: Mapping[str, Any]) -> int:
    """GPUs a job holds: nodes times GPUs per node (0 when the template asks for none)."""
    return int(values.get("nodes", 1) or 1) * int(values.get("gpus_per_node", 0) or 0)
