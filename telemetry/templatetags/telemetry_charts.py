"""The chart grid's boxes from the one chart table (telemetry/series.py); which jobs can fill the trainer charts."""

from __future__ import annotations

import re

from django import template

from clusters import kinds
from telemetry.series import CHARTS

register = template.Library()

# The bundled trainer, or any script printing its line (docs/architecture.md: "epoch=… step=… loss=… tok/s=…").
TRAINER_MARKS = re.compile(r"trainer/train\.py|\btrain\.py\b|loss=")


@register.simple_tag
def chart_boxes(trainer: bool) -> list[tuple[str, dict]]:
    """(name, spec) of every chart a page shows; the trainer's (by step) only where a job can fill them."""
    return [(name, spec) for name, spec in CHARTS.items() if trainer or "x" not in spec]


@register.filter
def measuring_note(cluster) -> str:
    """What the cluster's kind says its charts cannot show (e.g. GPUs without Prometheus), or ""."""
    return kinds.kind_of(cluster.kind).telemetry_note(cluster)


@register.filter
def prints_training_metrics(job) -> bool:
    """Whether the job's template runs the bundled trainer or prints its line: else Loss and tok/s stay empty."""
    template = job.template
    # The bundled trainer's own knob: templates that run it (by script or image) expose its max_steps.
    knobs = {p.get("name") for p in template.parameters or [] if isinstance(p, dict)}
    return "max_steps" in knobs or bool(TRAINER_MARKS.search(template.body or ""))
