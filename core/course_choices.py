"""The course vocabulary: the roles people hold in a course and how a course's Kubernetes namespaces are laid out.

A leaf like core/choices.py, so the Kubernetes kind (clusters/backends/kubernetes/namespaces.py) reads a course's
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
