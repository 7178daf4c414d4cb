"""Who may see which lab: the course's members see its labs (each student only their own progress); its teachers
(instructors and TAs) see everyone's; only those who manage the course load, write and change its labs (a TA is told
so, 403). Everything else is 404, through the course access helper (courses/access.py)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import Http404

from courses.access import get_course, get_managed_course, may_manage, may_teach
from courses.models import Course, Enrollment, Role

from .models import Lab, Section, Step

__all__ = [
    "EDIT_LABS",
    "get_editable_lab",
    "get_editable_section",
    "get_editable_step",
    "get_lab",
    "get_managed_course",
    "may_manage",
    "may_teach",
    "students_of",
]

EDIT_LABS = "write and change its labs"  # a TA is told "Only the course's instructors write and change its labs."


def get_lab(user, course_slug: str, lab_slug: str, *, teach: bool = False) -> Lab:
    """A lab of a course the user belongs to (teaches, with teach=True: a student gets 404 like anyone else)."""
    course = get_course(user, course_slug, teach=teach)
    lab = Lab.objects.select_related("course", "lab_session").filter(course=course, slug=lab_slug).first()
    if lab is None:
        raise Http404("No such lab.")
    return lab


def get_editable_lab(user, course_slug: str, lab_slug: str, *, write: bool = False) -> Lab:
    """A lab of a course the user manages; write=True: about to change it (a course whose term ended refuses)."""
    course = get_managed_course(user, course_slug, EDIT_LABS, write=write)
    lab = Lab.objects.select_related("course").filter(course=course, slug=lab_slug).first()
    if lab is None:
        raise Http404("No such lab.")
    return lab


def get_editable_section(user, course_slug: str, lab_slug: str, section_id: int, *, write: bool = False) -> Section:
    lab = get_editable_lab(user, course_slug, lab_slug, write=write)
    section = Section.objects.select_related("lab__course").filter(lab=lab, pk=section_id).first()
    if section is None:
        raise Http404("No such section.")
    return section


def get_editable_step(user, course_slug: str, lab_slug: str, step_id: int, *, write: bool = False) -> Step:
    lab = get_editable_lab(user, course_slug, lab_slug, write=write)
    step = Step.objects.select_related("section__lab__course", "template").filter(section__lab=lab, pk=step_id).first()
    if step is None:
        raise Http404("No such step.")
    return step


def students_of(course: Course):
    return (
        get_user_model()
        .objects.filter(enrollments__course=course, enrollments__role=Role.STUDENT)
        .order_by("username")
        .distinct()
    )


def is_student(user, course: Course) -> bool:
    return Enrollment.objects.filter(user=user, course=course, role=Role.STUDENT).exists()
