"""What the Kubernetes kind keeps of a cluster and of a course (clusters/kind_settings.py): typed, validated, JSON on
the shared rows. Read them with `cluster_settings(cluster)` and `course_settings(course)`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms

from clusters.kind_settings import KindSettings, setting
from core.course_choices import KueuePreemption, NamespaceMode

KIND = "kubernetes"


def _installed(yes: str, no: str):
    return lambda found: f"installed: {yes}" if found else f"not installed: {no}"


# What Test connection looks for by discovery (kueue.ADDONS says how), as the cluster's page names each.
ADDON_LABELS = {
    "kueue": "Kueue (kueue.x-k8s.io/v1beta1)",
    "kueue_visibility": "Kueue's visibility API",
    "training_operator": "Training Operator (PyTorchJob)",
    "kuberay": "KubeRay (RayJob)",
    "appwrapper": "AppWrapper",
}


def addons_in_words(found: Any) -> str:
    if not found:
        return "not checked yet: run Test connection"
    return "; ".join(f"{label}: {'found' if found.get(fact) else 'not found'}" for fact, label in ADDON_LABELS.items())


@dataclass(frozen=True)
class KubernetesClusterSettings(KindSettings):
    ca_certificate: str = setting(
        forms.CharField(
            label="API server CA certificate",
            required=False,
            widget=forms.Textarea(attrs={"rows": 4}),
            help_text="The PEM CA that signed the API server's certificate (public, not a secret).",
        ),
        "",
    )
    kube_context: str = setting(
        forms.CharField(
            label="kubeconfig context",
            max_length=255,
            required=False,
            help_text="The context to use from the account's kubeconfig; empty means its current-context.",
        ),
        "",
        file_key="job.context",
    )
    gpu_sharing_factor: int = setting(
        forms.IntegerField(
            label="GPU sharing factor",
            min_value=1,
            max_value=64,
            help_text="With time-sliced GPUs each physical GPU is advertised this many times (e.g. 4). Students then "
            "see “shared GPU”.",
        ),
        1,
        file_key="job.gpu_sharing_factor",
    )
    prometheus_url: str = setting(
        forms.URLField(
            label="Prometheus URL",
            required=False,
            assume_scheme="https",
            help_text="Where dcgm-exporter's GPU metrics can be queried, e.g. http://prometheus.monitoring:9090. "
            "Empty: GPU charts are not shown for this cluster's pods.",
        ),
        "",
        file_key="job.prometheus_url",
    )
    has_mpi_operator: bool = setting(
        forms.BooleanField(label="MPI Operator", required=False),
        False,
        detected=True,
        describe=_installed("MPIJob templates can run", "no MPIJob templates"),
    )
    has_metrics_api: bool = setting(
        forms.BooleanField(label="metrics API", required=False),
        False,
        detected=True,
        describe=lambda found: "available: pod CPU and memory charts"
        if found
        else "not available: no pod usage charts",
    )
    kube_addons: dict = setting(
        forms.JSONField(label="Kubernetes add-ons", required=False),
        {},
        detected=True,
        describe=addons_in_words,
    )
    kueue_cohort: str = setting(
        forms.CharField(
            label="Kueue cohort",
            max_length=253,
            required=False,
            help_text="With Kueue: the cohort the portal's course ClusterQueues join, lending each other idle GPUs. "
            "Empty: each course keeps to its own quota.",
        ),
        "",
        file_key="job.kueue_cohort",
    )
    kueue_flavor: str = setting(
        forms.CharField(
            label="Kueue GPU flavor",
            max_length=253,
            required=False,
            help_text="With Kueue: the ResourceFlavor that course ClusterQueues give their GPU quota in. Empty: "
            "default-flavor.",
        ),
        "default-flavor",
        file_key="job.kueue_flavor",
    )


def _count(label: str, help_text: str = "") -> forms.IntegerField:
    return forms.IntegerField(label=label, min_value=0, max_value=100_000, help_text=help_text)


def _gpus(label: str, help_text: str) -> forms.IntegerField:
    return forms.IntegerField(label=label, min_value=0, max_value=100_000, required=False, help_text=help_text)


@dataclass(frozen=True)
class KubernetesCourseSettings(KindSettings):
    namespace_mode: str = setting(
        forms.ChoiceField(
            label="Kubernetes namespaces",
            choices=NamespaceMode.choices,
            help_text="One namespace per student keeps students' pods, volumes and services apart; in one namespace "
            "for the course they can reach each other's.",
        ),
        NamespaceMode.PER_STUDENT.value,  # students apart by default: one namespace is shared by all its pods
    )
    max_cpus: int = setting(_count("max CPUs per student", "Kubernetes CPU requests."), 16)
    max_memory_gb: int = setting(_count("max memory per student (GiB)"), 96)
    max_pods: int = setting(_count("max pods per student"), 16)
    max_volumes: int = setting(_count("max volumes per student", "PersistentVolumeClaims."), 4)
    ingress_host: str = setting(
        forms.CharField(
            label="ingress host",
            max_length=253,
            required=False,
            help_text="A wildcard DNS domain, e.g. lab.example.edu; each inference server then gets a name in it, "
            "e.g. http://gpulab-1a2b3c4d.lab.example.edu. Empty: students use kubectl port-forward.",
        ),
        "",
    )
    kueue_local_queue: str = setting(
        forms.CharField(
            label="existing Kueue LocalQueue",
            max_length=253,
            required=False,
            help_text="The LocalQueue, already in each of the course's namespaces, that its jobs go to. Empty: the "
            "portal manages a ClusterQueue for the course (its quota: the per-student GPUs times the students) and a "
            "LocalQueue in each of its namespaces.",
        ),
        "",
    )
    kueue_preemption: str = setting(
        forms.ChoiceField(
            label="Kueue preemption",
            choices=[("", "---------"), *KueuePreemption.choices],
            required=False,
            help_text="For the ClusterQueue the portal manages. Empty: MLBatch's (the first).",
        ),
        KueuePreemption.MLBATCH.value,
    )
    kueue_borrowing_limit: int | None = setting(
        _gpus("GPUs it may borrow", "From the cohort, above its quota. Empty: no limit."), None
    )
    kueue_lending_limit: int | None = setting(
        _gpus("GPUs it may lend", "Of its idle quota, to the cohort. Empty: all of them."), None
    )


def cluster_settings(cluster: Any) -> KubernetesClusterSettings:
    return KubernetesClusterSettings.of(cluster.kind_settings)


def course_settings(course: Any) -> KubernetesCourseSettings:
    return KubernetesCourseSettings.of((course.kind_settings or {}).get(KIND))
