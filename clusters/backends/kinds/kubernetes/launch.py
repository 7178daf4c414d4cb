"""Launching on Kubernetes: the template's objects rendered for the student's namespace, an Ingress when the
course has an ingress host, and the resources checked against the template's and the course's limits
before anything is created. The result is YAML, stored on the Job as exactly what will be sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...kind import RenderRefused
from . import appwrapper, kueue
from .manifests import (
    ManifestContext,
    ManifestError,
    Resources,
    check_object,
    dump,
    render_manifests,
    requested_resources,
    wrapped_objects,
)
from .namespaces import namespace_for
from .settings import cluster_settings, course_settings

# Operator kinds a cluster runs only where Test connection found the operator: (kind, fact in kube_addons, name).
OPERATORS = [
    ("PyTorchJob", "training_operator", "Kubeflow Training Operator"),
    ("RayJob", "kuberay", "KubeRay operator"),
]


class ResourcesRefused(RenderRefused):
    """The objects ask for more than the template or the course allows; the message names the limit."""


@dataclass
class Rendered:
    script: str
    resources: Resources


def context_for(user, course, job_id: uuid.UUID) -> ManifestContext:
    return ManifestContext(
        job_id=str(job_id), namespace=namespace_for(course, user), owner=user.username, course=course.slug
    )


def first_service(objects: list[dict]) -> tuple[str, int] | None:
    for obj in objects:
        if obj.get("kind") == "Service":
            ports = (obj.get("spec") or {}).get("ports") or [{}]
            return obj["metadata"]["name"], int(ports[0].get("port") or 80)
    return None


def ingress_for(objects: list[dict], ctx: ManifestContext, host_domain: str) -> dict | None:
    """An Ingress for the job's Service at http://<job name>.<course ingress host>/."""
    service = first_service(objects)
    if service is None:
        return None
    name, port = service
    ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": ctx.job_name},
        "spec": {
            "rules": [
                {
                    "host": f"{ctx.job_name}.{host_domain}",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": name, "port": {"number": port}}},
                            }
                        ]
                    },
                }
            ]
        },
    }
    return check_object(ingress, ctx)


def render(
    template,
    course,
    user,
    values: Mapping[str, Any],
    job_id: uuid.UUID,
    *,
    with_ingress: bool = True,
    cluster: Any = None,
) -> Rendered:
    ctx = context_for(user, course, job_id)
    try:
        objects = render_manifests(template.body, template.schema(), values, ctx)
        if with_ingress and course_settings(course).ingress_host and template.endpoint_api:
            ingress = ingress_for(objects, ctx, course_settings(course).ingress_host)
            if ingress is not None:
                objects.append(ingress)
        for kind, addon, operator in OPERATORS:
            found = cluster is not None and cluster_settings(cluster).kube_addons.get(addon)
            if cluster is not None and not found and any(o["kind"] == kind for o in objects):
                raise RenderRefused(
                    f"This template runs a {kind}, and {cluster.display_name} has no {operator} (Test connection "
                    "finds it). Pick another cluster, or ask an admin to install it."
                )
        if cluster is not None and not appwrapper.available(cluster):  # the wrapped Job alone, as a plain Job
            objects = appwrapper.unwrapped(objects)
        if cluster is not None and kueue.uses_kueue(cluster):  # every workload in the course's queue
            kueue.put_in_queue(objects, kueue.local_queue_name(course), ctx.job_name)
    except ManifestError as exc:
        raise RenderRefused(f"The template cannot be rendered ({exc}); tell your instructor.") from None
    for obj in [*objects, *(inner for o in objects for inner in wrapped_objects(o))]:
        limit = template.max_minutes * 60
        if obj["kind"] == "Job":  # the template's time limit, enforced by Kubernetes (DeadlineExceeded)
            obj["spec"]["activeDeadlineSeconds"] = min(obj["spec"].get("activeDeadlineSeconds") or limit, limit)
        elif obj["kind"] == "PyTorchJob":  # by the Training Operator, from its runPolicy
            policy = obj["spec"].setdefault("runPolicy", {})
            policy["activeDeadlineSeconds"] = min(policy.get("activeDeadlineSeconds") or limit, limit)
        elif obj["kind"] == "RayJob":  # by KubeRay, counted from when it starts the Ray cluster (DeadlineExceeded)
            obj["spec"]["activeDeadlineSeconds"] = min(obj["spec"].get("activeDeadlineSeconds") or limit, limit)
    resources = requested_resources(objects)
    check_resources(template, course, resources)
    return Rendered(script=dump(objects), resources=resources)


def check_resources(template, course, wanted: Resources) -> None:
    """Refuse, naming the limit, a job that could never fit: above the template's or the course's quota."""
    limits = course_settings(course)
    if wanted.gpus > template.max_gpus:
        raise ResourcesRefused(
            f"This job asks for {wanted.gpus} GPU(s); the template allows at most {template.max_gpus}. "
            "Lower the GPUs or replicas."
        )
    if wanted.cpu_millis > limits.max_cpus * 1000:
        raise ResourcesRefused(
            f"This job asks for {wanted.cpu_millis / 1000:g} CPUs; {course.name} allows {limits.max_cpus} CPUs per "
            "student. Lower the replicas or ask your instructor."
        )
    if wanted.memory_bytes > limits.max_memory_gb * 2**30:
        raise ResourcesRefused(
            f"This job asks for {wanted.memory_bytes / 2**30:g} GiB of memory; {course.name} allows "
            f"{limits.max_memory_gb} GiB per student. Lower the replicas or ask your instructor."
        )
    if wanted.pods > limits.max_pods:
        raise ResourcesRefused(
            f"This job can run {wanted.pods} pods; {course.name} allows {limits.max_pods} per student. "
            "Lower the replicas or the autoscaling limit."
        )
