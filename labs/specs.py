"""The vocabulary of a step's check and quick fixes, validated as data (DRF serializers): an instructor or a lab file
names what to look for; nothing here is code, and a pattern is a literal piece of text (no regular expressions, so
no pattern can take a log's reading hostage)."""

from __future__ import annotations

from django.db import models
from rest_framework import serializers

from core.choices import TERMINAL_STATES, JobState

PATTERN_MAX = 200  # characters: a log line's telling part, not a paragraph


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
    def __init__(self, **kwargs):
        super().__init__(max_length=PATTERN_MAX, trim_whitespace=False, **kwargs)


class CheckSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=CheckKind.choices)
    pattern = _Pattern(required=False)
    figure = serializers.ChoiceField(choices=Figure.choices, required=False)
    bound = serializers.ChoiceField(choices=Bound.choices, required=False)
    value = serializers.FloatField(required=False)
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


class QuickFixSerializer(serializers.Serializer):
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
