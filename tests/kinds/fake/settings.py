"""The fake kind's own settings, declared here alone: no shared app, model, migration or admin names them."""

from __future__ import annotations

from dataclasses import dataclass

from django import forms

from clusters.kind_settings import KindSettings, setting


@dataclass(frozen=True)
class MemorySettings(KindSettings):
    max_gpus: int = setting(
        forms.IntegerField(label="GPUs a job may hold", min_value=1, max_value=8, help_text="At most 8."),
        2,
        file_key="job.max_gpus",
    )
    slots_free: int | None = setting(
        forms.IntegerField(label="free slots", required=False),
        None,
        detected=True,
        describe=lambda free: "not counted yet" if free is None else f"{free} slots free",
    )
