"""The course questions: who belongs to a course, who teaches it, who manages it, which clusters a member may use.

Two kinds of teacher (docs/roles.md): a TA *teaches* a course (sees and cancels every job of it, with what goes with
seeing them: the class's job list, dashboards, job pages, logs, telemetry, files read-only); an instructor (or an
admin) also *manages* it: templates, quotas and budgets, the roster, the webhook, lab sessions, a new term, a shell
in a student's job. may_manage is that line, asked by every page, endpoint and task that changes a course.

Every access answer stands on these: jobs/access.py (jobs, templates, their files and streams) and
telemetry/access.py (nodes) build on them, and clusters/access.py answers which clusters a user sees. Anything a
user may not see is reported as missing (Http404), so the answer never reveals that it exists.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from clusters.access import get_files_cluster, visible_clusters
from clusters.kinds import kind_of, kinds_running
from clusters.models import Cluster
from core.roles import is_admin

from . import terms
from .models import TEACHING_ROLES, Course, Enrollment, LabSession, Role

__all__ = [
    "courses_for",
    "get_copyable_course",
    "get_course",
    "get_files_cluster",
    "get_lab_session",
    "get_managed_course",
    "get_roster_course",
    "is_admin",
    "launchable_clusters",
    "managed_courses",
    "may_manage",
    "may_teach",
    "role_in",
    "teaching_courses",
    "visible_clusters",
]


def courses_for(user) -> QuerySet[Course]:
    """Courses the user belongs to (all of them for an admin)."""
    if is_admin(user):
        return Course.objects.all()
    if not user.is_authenticated:
        return Course.objects.none()
    return Course.objects.filter(enrollments__user=user).distinct()


def teaching_courses(user) -> QuerySet[Course]:
    """Courses whose every job the user may see and cancel: taught ones (instructor or TA), or all for an admin."""
    if is_admin(user):
        return Course.objects.all()
    if not user.is_authenticated:
        return Course.objects.none()
    return Course.objects.filter(enrollments__user=user, enrollments__role__in=TEACHING_ROLES).distinct()


def managed_courses(user) -> QuerySet[Course]:
    """Courses the user manages (templates, quotas, roster, ...): those they are an instructor of, or all for an
    admin. A TA's course is not among them."""
    if is_admin(user):
        return Course.objects.all()
    if not user.is_authenticated:
        return Course.objects.none()
    return Course.objects.filter(enrollments__user=user, enrollments__role=Role.INSTRUCTOR).distinct()


def role_in(user, course: Course) -> str | None:
    if not user.is_authenticated:
        return None
    return Enrollment.objects.filter(user=user, course=course).values_list("role", flat=True).first()


def may_teach(user, course: Course) -> bool:
    """Instructors, TAs and admins: they may launch before the term starts, to try the templates they prepare."""
    return is_admin(user) or role_in(user, course) in TEACHING_ROLES


LAB_SESSIONS = "book and cancel its lab sessions"  # what a TA is told they may not do, after "Only the ..."


def may_manage(user, course: Course) -> bool:
    """Instructors and admins: everything of the course beyond seeing and cancelling its jobs. Not a TA."""
    return is_admin(user) or role_in(user, course) == Role.INSTRUCTOR


def get_managed_course(user, slug: str, what: str, *, write: bool = False) -> Course:
    """A course the user manages; `what` names the action for the refusal ("set its quotas"). A TA sees the course
    but gets 403 ("Only the course's instructors set its quotas. Ask one of them."); anyone else 404, as for the
    course itself. write=True: as for get_course."""
    course = get_course(user, slug, teach=True)
    if not may_manage(user, course):
        raise PermissionDenied(f"Only the course's instructors {what}. Ask one of them.")
    if write:
        terms.check_writable(course)
    return course


def get_copyable_course(user, slug: str) -> Course:
    """A course the user may copy to a new term (and so become the new one's instructor), ended or not."""
    return get_managed_course(user, slug, "copy it to a new term")


def get_course(user, slug: str, *, teach: bool = False, write: bool = False) -> Course:
    """The course if the user belongs to it (teaches it, with teach=True); else 404.

    write=True: the caller is about to change the course (templates, quotas, roster); a course whose term has
    ended refuses with terms.CourseReadOnly, a 403 that says why."""
    courses = teaching_courses(user) if teach else courses_for(user)
    try:
        course = courses.get(slug=slug)
    except Course.DoesNotExist:
        raise Http404("No such course.") from None
    if write:
        terms.check_writable(course)
    return course


def get_roster_course(user, slug: str, *, write: bool = False) -> Course:
    """The course whose roster the user may manage (import, add, change a role, remove, invite)."""
    return get_managed_course(user, slug, "manage its roster", write=write)


def get_lab_session(user, slug: str, session_id: int, *, write: bool = False) -> LabSession:
    """A lab session of a course the user manages (a TA: 403); anyone else's (another course's instructor included)
    is 404."""
    course = get_managed_course(user, slug, LAB_SESSIONS, write=write)
    session = course.lab_sessions.select_related("cluster", "course").filter(pk=session_id).first()
    if session is None:
        raise Http404("No such lab session.")
    return session


def launchable_clusters(user, course: Course, template: Any = None) -> QuerySet[Cluster]:
    """The course's enabled clusters the user may launch on; with a template (a jobs.JobTemplate, read by its backend
    here and by each cluster's kind: courses stands below jobs), those that run it as Test connection found them."""
    if role_in(user, course) is None and not is_admin(user):
        return Cluster.objects.none()
    clusters = course.clusters.filter(enabled=True)
    if template is not None:
        clusters = clusters.filter(kind__in=kinds_running(template.backend))
        running = [cluster.pk for cluster in clusters if kind_of(cluster.kind).runs_template(cluster, template)]
        clusters = clusters.filter(pk__in=running)
    return clusters
