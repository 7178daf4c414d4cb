"""What both SLURM kinds keep of a cluster beyond the shared fields (clusters/kind_settings.py): whether it keeps
SLURM accounting, as Test connection last found it. Read it with `cluster_settings(cluster)`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms

from clusters.kind_settings import KindSettings, setting


def accounting_in_words(has_accounting: bool | None) -> str:
    """SLURM accounting as every page says it (the cluster's admin page, Test connection, job pages): what Test
    connection learnt and stored on the cluster, None until it ran."""
    if has_accounting is None:
        return "not checked yet: “Test connection” finds out (until then jobs are followed with scontrol)"
    if has_accounting:
        return "available: jobs are followed with sacct, and job pages show CPU and memory figures once a job ends"
    return "off: this cluster keeps no SLURM accounting; jobs are followed with scontrol, with no CPU or memory figures"


@dataclass(frozen=True)
class SlurmClusterSettings(KindSettings):
    has_accounting: bool | None = setting(
        forms.NullBooleanField(label="SLURM accounting", required=False),
        None,
        detected=True,
        file_key="job.has_accounting",
        describe=accounting_in_words,
    )


def cluster_settings(cluster: Any) -> SlurmClusterSettings:
    return SlurmClusterSettings.of(cluster.kind_settings)
