"""The launch form, generated from a template's schema (the template editor's forms: template_forms.py)."""

from __future__ import annotations

import math
from typing import cast

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.core.validators import RegexValidator
from django.http import QueryDict

from core.templating.params import FLOAT_TEXT, INT_TEXT, PATTERN_FALLBACK, Param

from .models import JobTemplate

PARAM_PREFIX = "param_"


class _DigitsOnly(forms.Field):
    """Numbers as the API takes them (core.templating.params): the digits 0-9, no spaces, no other script's digits."""

    text = INT_TEXT
    wrong_text = "Enter a whole number such as 2, with the digits 0-9 and no spaces."

    def to_python(self, value):
        if isinstance(value, str) and value and not self.text.fullmatch(value):
            raise forms.ValidationError(self.wrong_text, code="invalid")
        return super().to_python(value)


class IntegerParamField(_DigitsOnly, forms.IntegerField):
    pass


class FloatParamField(_DigitsOnly, forms.FloatField):
    text = FLOAT_TEXT
    wrong_text = "Enter a number such as 0.0003 or 3e-4, with the digits 0-9 and a point for decimals."


def _plain(number: float) -> str:
    """0.000001 rather than 1e-06, 60 rather than 60.0."""
    return str(int(number)) if float(number).is_integer() else format(number, "f").rstrip("0")


def _range_text(param: Param) -> str:
    """The bounds in words, from the schema (one home for them): "From 1 to 60." """
    if param.type not in {"int", "float"} or (param.min is None and param.max is None):
        return ""
    low, high = (_plain(v) if v is not None else None for v in (param.min, param.max))
    if low is not None and high is not None:
        return f"From {low} to {high}."
    return f"At least {low}." if low is not None else f"At most {high}."


def _fixed_value(param: Param, choices: tuple[str, ...] | None):
    """The only value the schema allows (min == max, or one choice), or None when there is a choice to make."""
    if param.type in {"int", "float"} and param.min is not None and param.min == param.max:
        return int(param.min) if param.type == "int" else param.min
    options = choices if choices is not None else param.choices
    if param.type == "choice" and len(options) == 1:
        return options[0]
    return None


def _field_for(param: Param, choices: tuple[str, ...] | None) -> forms.Field:
    fixed = _fixed_value(param, choices)
    help_text = " ".join(t for t in (param.help, "" if fixed is not None else _range_text(param)) if t)
    common = {"label": param.label, "help_text": help_text, "initial": param.default if fixed is None else fixed}
    if fixed is not None:
        common["disabled"] = True  # shown as text; Django takes the initial value and ignores what is posted
    if param.type == "int":  # whole bounds: a browser counts a number input's steps from its min
        low = math.ceil(param.min) if param.min is not None else None
        high = math.floor(param.max) if param.max is not None else None
        return IntegerParamField(min_value=low, max_value=high, **common)
    if param.type == "float":
        return FloatParamField(min_value=param.min, max_value=param.max, **common)
    if param.type == "bool":
        return forms.BooleanField(required=False, **common)
    if param.type == "choice":
        options = choices if choices is not None else param.choices
        return forms.ChoiceField(choices=[(c, c) for c in options], **common)
    wrong = param.pattern_help or PATTERN_FALLBACK
    validators = [RegexValidator(f"^(?:{param.pattern})\\Z", wrong)] if param.pattern else []
    return forms.CharField(max_length=param.max_length, required=False, strip=False, validators=validators, **common)


def _cluster_label(cluster) -> str:
    if cluster.shares_gpus:
        return f"{cluster.display_name} (shared GPUs: each is 1/{cluster.gpu_share} of a physical GPU)"
    return cluster.display_name


class _ClusterField(forms.ModelChoiceField):
    def label_from_instance(self, obj) -> str:
        return _cluster_label(obj)


class LaunchForm(forms.Form):
    cluster = _ClusterField(queryset=None, empty_label=None, help_text="Where the job runs.")

    def __init__(self, *args, template: JobTemplate, clusters, locked: frozenset[str] = frozenset(), **kwargs):
        """locked: parameters shown as text with their initial value (a lab step's fixed values); what is posted
        for them is ignored, as for a template's own fixed values."""
        super().__init__(*args, **kwargs)
        self.template = template
        self.schema = template.schema()
        cast(_ClusterField, self.fields["cluster"]).queryset = clusters
        for param in self.schema:
            options = None
            if param.cluster_choices:
                # Every option any of these clusters offers; the chosen cluster's list is enforced on submit.
                seen: dict[str, None] = {}
                for cluster in clusters:
                    seen.update(dict.fromkeys(getattr(cluster, param.cluster_choices) or ()))
                options = tuple(seen)
            field = self.fields[PARAM_PREFIX + param.name] = _field_for(param, options)
            if param.name in locked and not field.disabled and PARAM_PREFIX + param.name in self.initial:
                field.disabled = True
                field.lab_step = True  # type: ignore[attr-defined]  # the page says who set it
            elif field.disabled:
                self.initial.pop(PARAM_PREFIX + param.name, None)  # a clone of an older version keeps the fixed value

    def full_clean(self):
        super().full_clean()
        if self.is_bound and self.errors:
            self._show_defaults_for_unknown_choices()

    def _show_defaults_for_unknown_choices(self) -> None:
        """A select whose posted value is no option would show its first option (a value nobody chose): it shows
        the parameter's default instead, while the error beside it still names what was posted."""
        data = cast(QueryDict, self.data).copy()  # bound to request.POST
        for name, field in self.fields.items():
            if not name.startswith(PARAM_PREFIX) or not isinstance(field, forms.ChoiceField) or field.disabled:
                continue
            if name in self.errors and not field.valid_value(data.get(name)):
                data[name] = self.get_initial_for_field(field, name)
        self.data = data

    @property
    def has_field_errors(self) -> bool:
        return any(name != NON_FIELD_ERRORS for name in self.errors)

    def param_values(self) -> dict:
        return {p.name: self.cleaned_data.get(PARAM_PREFIX + p.name) for p in self.schema}

    def add_param_errors(self, errors: dict[str, str]) -> None:
        for name, message in errors.items():
            field = PARAM_PREFIX + name
            self.add_error(field if field in self.fields else None, message)

    @staticmethod
    def initial_from(params: dict) -> dict:
        return {PARAM_PREFIX + name: value for name, value in params.items()}


_SMALL_NUMBER = forms.NumberInput(attrs={"class": "small-number"})


class LoadTestForm(forms.Form):
    """A server's load test, as the job page asks for it. The values go back into the page's address after a start
    (or a refusal), so the form shows what the student asked for last instead of the defaults."""

    prompts = forms.IntegerField(label="Prompts", min_value=1, max_value=1000, initial=64, widget=_SMALL_NUMBER)
    concurrency = forms.IntegerField(label="At once", min_value=1, max_value=64, initial=8, widget=_SMALL_NUMBER)
    output_len = forms.IntegerField(label="Output tokens", min_value=1, max_value=512, initial=64, widget=_SMALL_NUMBER)

    @classmethod
    def remembered(cls, query: QueryDict) -> LoadTestForm:
        """The form drawn with the values of the page's address where they are valid, each other at its default."""
        asked = cls({name: query.get(name, "") for name in cls.base_fields})
        asked.is_valid()
        kept = {name: value for name, value in getattr(asked, "cleaned_data", {}).items() if value is not None}
        return cls(initial=kept, auto_id="load-test-%s")

    def values(self) -> dict[str, int]:
        return {name: self.cleaned_data[name] for name in self.fields}

    def problems(self) -> str:
        """The errors in one line for a message: "At once: Ensure this value is less than or equal to 64." """
        return " ".join(
            f"{self.fields[name].label}: {' '.join(map(str, errors))}" for name, errors in self.errors.items()
        )
