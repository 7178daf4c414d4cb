"""The Kubernetes namespaces the portal keeps for a course: their names, labels, quota and default limits.

Students never pick a namespace. A course has one namespace for everyone or one per student; either way
its ResourceQuota is the course's per-student limits times the students it holds, so the cluster enforces
what the portal promises even if something is launched around it.
"""

from __future__ import annotations

import hashlib
import re

from core.course_choices import NamespaceMode, Role

from .manifests import LABEL_COURSE, LABEL_OWNER, MANAGED_BY, MANAGED_BY_LABEL, label_value
from .plans import NamespacePlan
from .settings import course_settings

PREFIX = "gpulab"


def _dns_label(*parts: str) -> str:
    """A valid namespace name (DNS-1123 label, at most 63 characters) that stays unique when shortened."""
    text = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")
    text = re.sub(r"-{2,}", "-", text)
    if len(text) <= 63:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{text[:54].rstrip('-')}-{digest}"


def namespace_for(course, user) -> str:
    if course_settings(course).namespace_mode == NamespaceMode.PER_STUDENT:
        return _dns_label(PREFIX, course.slug, user.username)
    return _dns_label(PREFIX, course.slug)


def plan_for(course, user) -> NamespacePlan:
    own = course_settings(course)
    per_student = own.namespace_mode == NamespaceMode.PER_STUDENT
    students = 1 if per_student else max(1, course.enrollments.filter(role=Role.STUDENT).count())
    labels = {MANAGED_BY_LABEL: MANAGED_BY, LABEL_COURSE: label_value(course.slug)}
    if per_student:
        labels[LABEL_OWNER] = label_value(user.username)
    return NamespacePlan(
        name=namespace_for(course, user),
        labels=labels,
        quota={
            "requests.nvidia.com/gpu": str(course.max_gpus * students),
            "requests.cpu": str(own.max_cpus * students),
            "requests.memory": f"{own.max_memory_gb * students}Gi",
            "pods": str(own.max_pods * students),
            "persistentvolumeclaims": str(own.max_volumes * students),
        },
        limits={
            "default": {"cpu": "1", "memory": "2Gi"},
            "defaultRequest": {"cpu": "250m", "memory": "512Mi"},
            "max": {"cpu": str(own.max_cpus), "memory": f"{own.max_memory_gb}Gi"},
        },
    )
