"""Who may see which lab: the course's members see its labs (each student only their own progress); its teachers
(instructors and TAs) see everyone's; only those who manage the course load labs into it. Everything else is 404,
through the course access helper (courses/access.py)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import Http404

from courses.access import get_course, get_managed_course, may_manage, may_teach
from courses.models import Course, Enrollment, Role

from .models import Lab

__all__ = ["get_lab", "get_managed_course", "may_manage", "may_teach", "students_of"]


def get_lab(user, course_slug: str, lab_slug: str, *, teach: bool = False) -> Lab:
    """A lab of a course the user belongs to (teaches, with teach=True: a student gets 404 like anyone else)."""
    course = get_course(user, course_slug, teach=teach)
    lab = Lab.objects.select_related("course", "lab_session").filter(course=course, slug=lab_slug).first()
    if lab is None:
        raise Http404("No such lab.")
    return lab


def students_of(course: Course):
    return (
        get_user_model()
        .objects.filter(enrollments__course=course, enrollments__role=Role.STUDENT)
        .order_by("username")
        .distinct()
    )


def is_student(user, course: Course) -> bool:
    return Enrollment.objects.filter(user=user, course=course, role=Role.STUDENT).exists()
