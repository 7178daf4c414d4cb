"""The vocabulary of a step's check and quick fixes, validated as data (DRF serializers): an instructor or a lab file
names what to look for; nothing here is code, and a pattern is a literal piece of text (no regular expressions, so
no pattern can take a log's reading hostage). A key the vocabulary does not know is refused, not ignored: a typo in
a lab file would otherwise drop a condition without a word.

template_problems() checks a step's launch values and check against its template's typed parameters
(core/templating/params.py), for the lab editor, lab files and the built-in labs alike."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from django.db import models
from rest_framework import serializers

from core.choices import TERMINAL_STATES, JobState
from core.templating.params import SAFE_STRING, SAFE_STRING_HELP, Param

PATTERN_MAX = 200  # characters: a log line's telling part, not a paragraph
# What only a regular expression says: .* .+ \d \w \s \. [^ (? (…)+ […]+ {2,5}. The check looks for the text as
# written, so such a pattern would only match those characters themselves: it is refused, saying so.
REGEX_SYNTAX = re.compile(r"\.[*+]|\\[dDwWsSbB.()\[\]{}|^$*+?]|\[\^|\(\?|\)[*+?{]|\][*+?{]|\{\d+,\d*\}")
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


class StrictSerializer(serializers.Serializer):
    """A serializer that names the keys it does not know instead of dropping them."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = sorted(str(key) for key in data if key not in self.fields)
            if unknown:
                known = ", ".join(self.fields)
                raise serializers.ValidationError(
                    {key: [f"Unknown key: use only {known}."] for key in unknown}, code="unknown"
                )
        return super().to_internal_value(data)


class FiniteFloat(serializers.FloatField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            raise serializers.ValidationError("Enter a finite number.")
        return value


class CheckKind(models.TextChoices):
    COMPLETED = "completed", "A run of the step's template completed"
    LOG = "log", "A run's log holds a line"
    FIGURE = "figure", "A run's figure crossed a threshold"
    DIFFERS = "differs", "Two completed runs differ in a parameter"
    ANSWER = "answer", "A short answer"


class Figure(models.TextChoices):
    """What a run's stored telemetry says (labs/figures.py), by the names a check uses."""

    TOKENS_PER_S = "tokens_per_s", "median tok/s"
    GPU_UTIL = "gpu_util", "mean GPU utilization after the first minute (%)"
    PEAK_GPU_MEMORY_GIB = "peak_gpu_memory_gib", "peak GPU memory (GiB)"
    FINAL_LOSS = "final_loss", "final loss"


class Bound(models.TextChoices):
    AT_LEAST = "at_least", "≥"
    AT_MOST = "at_most", "≤"


class _Pattern(serializers.CharField):
    """A piece of one log line, found as written: bounded, on one line, and not a regular expression."""

    def __init__(self, **kwargs):
        super().__init__(max_length=PATTERN_MAX, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        text = super().to_internal_value(data)
        if CONTROL_CHARS.search(text):
            raise serializers.ValidationError("Write text from one line of the log: no line breaks or tabs.")
        if REGEX_SYNTAX.search(text):
            raise serializers.ValidationError(
                "This looks like a regular expression, but the check looks for the text exactly as written: copy a "
                "piece of the log line itself (e.g. tok/s= or CUDA out of memory)."
            )
        return text


class CheckSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=CheckKind.choices)
    pattern = _Pattern(required=False)
    figure = serializers.ChoiceField(choices=Figure.choices, required=False)
    bound = serializers.ChoiceField(choices=Bound.choices, required=False)
    value = FiniteFloat(required=False)
    parameter = serializers.RegexField(r"^[a-z_][a-z0-9_]{0,63}$", required=False)
    choices = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=10)
    correct = serializers.CharField(max_length=200, required=False)

    NEEDS = {
        CheckKind.LOG: ("pattern",),
        CheckKind.FIGURE: ("figure", "bound", "value"),
        CheckKind.DIFFERS: ("parameter",),
    }

    def validate(self, attrs):
        missing = [name for name in self.NEEDS.get(attrs["kind"], ()) if name not in attrs]
        if missing:
            raise serializers.ValidationError(f"A {attrs['kind']} check needs {', '.join(missing)}.")
        if attrs["kind"] == CheckKind.LOG and not attrs["pattern"].strip():
            raise serializers.ValidationError("A log check needs some text to look for.")
        if ("choices" in attrs) != ("correct" in attrs) or attrs.get("correct", "") not in attrs.get("choices", [""]):
            raise serializers.ValidationError("A choice answer names its choices and which one is correct.")
        return attrs


class QuickFixSerializer(StrictSerializer):
    """Shown to a student whose run for the step went wrong: when every condition given holds."""

    states = serializers.ListField(child=serializers.ChoiceField(choices=JobState.choices), required=False)
    reason = _Pattern(required=False)  # in the scheduler's reason or the portal's error for the job
    log = _Pattern(required=False)  # in the job's log
    text = serializers.CharField(max_length=1000)

    def validate(self, attrs):
        if not any(attrs.get(name) for name in ("states", "reason", "log")):
            raise serializers.ValidationError("A quick fix says when it applies: states, reason or log.")
        return attrs


def clean_check(data) -> dict:
    """The check as stored ({} for none), or serializers.ValidationError."""
    if not data:
        return {}
    checked = CheckSerializer(data=data)
    checked.is_valid(raise_exception=True)
    return dict(checked.validated_data)


def clean_quick_fixes(data) -> list[dict]:
    checked = QuickFixSerializer(data=data or [], many=True)
    checked.is_valid(raise_exception=True)
    return [dict(item) for item in checked.validated_data]


FAILED_STATES = frozenset(TERMINAL_STATES) - {JobState.COMPLETED}


def template_problems(
    schema: list[Param],
    preset: Mapping[str, Any],
    fixed: list[str],
    check: Mapping[str, Any],
    cluster_choices: Mapping[str, tuple[str, ...]] | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """A step's preset values typed by its template's parameters, and what is wrong, by where it is wrong ("preset.
    <name>", "fixed", "check.parameter"). cluster_choices: the values the course's clusters offer for a choice the
    schema leaves to the cluster (partition, gpu_type); without any, such a value only needs to be a safe string."""
    params = {param.name: param for param in schema}
    typed: dict[str, Any] = {}
    problems: dict[str, str] = {}
    for name, raw in preset.items():
        param = params.get(name)
        if param is None:
            problems[f"preset.{name}"] = f"The template has no parameter “{name}”."
            continue
        offered = (cluster_choices or {}).get(name) if param.cluster_choices else None
        if param.cluster_choices and not offered:  # no cluster lists any yet: the launch form checks it later
            offered = (str(raw),) if SAFE_STRING.fullmatch(str(raw)) and len(str(raw)) <= 64 else ()
            if not offered:
                problems[f"preset.{name}"] = f"{param.label}: {SAFE_STRING_HELP}"
                continue
        try:
            typed[name] = param.clean(raw, offered)
        except ValueError as exc:
            problems[f"preset.{name}"] = f"{param.label}: {exc}"
    loose = [name for name in fixed if name not in preset]
    if loose:
        problems["fixed"] = f"Fixed values need a preset: {', '.join(loose)}."
    varied = check.get("parameter") if check.get("kind") == CheckKind.DIFFERS else None
    if varied is not None and varied not in params:
        problems["check.parameter"] = f"The template has no parameter “{varied}”: pick one of {', '.join(params)}."
    elif varied is not None and varied in fixed:
        problems["check.parameter"] = f"“{varied}” is fixed for this step, so two runs cannot differ in it: unfix it."
    return typed, problems


def check_in_words(check: Mapping[str, Any], launches: bool) -> str:
    """What marks a step done, as the lab editor lists it."""
    kind = str(check.get("kind") or (CheckKind.COMPLETED if launches else ""))
    if kind == CheckKind.LOG:
        return f"its log holds “{check.get('pattern', '')}”"
    if kind == CheckKind.FIGURE:
        figure, bound = Figure(check["figure"]).label, Bound(check["bound"]).label
        return f"{figure} {bound} {check['value']:g}"
    if kind == CheckKind.DIFFERS:
        return f"two completed runs differ in {check.get('parameter')}"
    if kind == CheckKind.ANSWER:
        options = check.get("choices") or []
        return f"a choice of {len(options)}" if options else "a short answer you mark"
    return "a completed run" if kind == CheckKind.COMPLETED else "nothing to check: a step to read"
