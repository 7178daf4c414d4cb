"""The course vocabulary: the roles people hold in a course, how a course's Kubernetes namespaces are laid out and
which preemption policy its Kueue ClusterQueue follows.

A leaf like core/choices.py, so the Kubernetes kind (clusters/backends/kinds/kubernetes/namespaces.py) reads a course's
settings without importing the courses app, which stands above clusters.
"""

from __future__ import annotations

from django.db import models


class Role(models.TextChoices):
    STUDENT = "student", "Student"
    TA = "ta", "Teaching assistant"
    INSTRUCTOR = "instructor", "Instructor"


class NamespaceMode(models.TextChoices):
    PER_COURSE = "course", "One namespace for the course"
    PER_STUDENT = "student", "One namespace per student"


class KueuePreemption(models.TextChoices):
    """A course ClusterQueue's preemption policy, as Kueue's three settings (kubernetes/kueue.py spells each out)."""

    MLBATCH = "mlbatch", "Newer jobs of the course yield; lent GPUs are taken back from any borrower (MLBatch)"
    LOWER_PRIORITY = "lower", "Only lower-priority jobs are preempted, in the course or to take back lent GPUs"
    NEVER = "never", "Nothing is preempted: jobs wait for GPUs to free"
