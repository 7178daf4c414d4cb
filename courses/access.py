"""The one place that answers "may this user see or act on this?".

Views, the REST API, WebSocket consumers and Celery tasks all ask here. Anything a user may not see is
reported as missing (Http404), so the answer never reveals that another student's job exists.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404

from ops import logs

from . import terms
from .models import TEACHING_ROLES, Course, Enrollment, Role

if TYPE_CHECKING:
    from clusters.models import Cluster
    from jobs.models import Job, JobTemplate
    from telemetry.models import Node


class LaunchRefused(Exception):
    """The user may not launch this template on this cluster; the message says why, for the user."""


def is_admin(user) -> bool:
    return bool(user.is_authenticated and user.is_active and (user.is_staff or user.is_superuser))


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


def role_in(user, course: Course) -> str | None:
    if not user.is_authenticated:
        return None
    return Enrollment.objects.filter(user=user, course=course).values_list("role", flat=True).first()


def may_teach(user, course: Course) -> bool:
    """Instructors, TAs and admins: they may launch before the term starts, to try the templates they prepare."""
    return is_admin(user) or role_in(user, course) in TEACHING_ROLES


def get_copyable_course(user, slug: str) -> Course:
    """A course the user may copy to a new term (and so become the new one's instructor): its instructors' and
    admins', ended or not. A TA gets 403, anyone else 404."""
    course = get_course(user, slug, teach=True)
    if not is_admin(user) and role_in(user, course) != Role.INSTRUCTOR:
        raise PermissionDenied("Only the course's instructors copy it to a new term. Ask one of them.")
    return course


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
    """The course whose roster the user may manage: its instructors' and admins'. A TA sees the course but may not
    change who is in it (403); anyone else gets 404, as for the course itself. write=True: as for get_course."""
    course = get_course(user, slug, teach=True, write=write)
    if not is_admin(user) and role_in(user, course) != Role.INSTRUCTOR:
        raise PermissionDenied("Only the course's instructors manage its roster. Ask one of them.")
    return course


def visible_jobs(user) -> QuerySet[Job]:
    """Jobs the user may see: their own, every job of a course they teach, everything for an admin."""
    from jobs.models import Job

    if is_admin(user):
        return Job.objects.all()
    if not user.is_authenticated:
        return Job.objects.none()
    return Job.objects.filter(Q(owner=user) | Q(course__in=teaching_courses(user)))


def get_job(user, job_id) -> Job:
    """A job the user may see and act on (cancel, clone, read its log); 404 for anything else."""
    try:
        job_uuid = uuid.UUID(str(job_id))
    except ValueError:
        raise Http404("No such job.") from None
    jobs = visible_jobs(user).select_related("template", "cluster", "course", "owner", "account")
    try:
        job = jobs.get(pk=job_uuid)
    except jobs.model.DoesNotExist:
        raise Http404("No such job.") from None
    logs.bind_job(job.pk)  # the rest of this request logs with the job's id
    return job


def visible_templates(user) -> QuerySet[JobTemplate]:
    """Templates the user may read: published ones of their courses; drafts too in courses they teach."""
    from jobs.models import JobTemplate

    if is_admin(user):
        return JobTemplate.objects.all()
    published = Q(status=JobTemplate.Status.PUBLISHED, courses__in=courses_for(user))
    authored = Q(courses__in=teaching_courses(user))
    return JobTemplate.objects.filter(published | authored).distinct()


def launchable_templates(user, course: Course) -> QuerySet[JobTemplate]:
    from jobs.models import JobTemplate

    if role_in(user, course) is None and not is_admin(user):
        return JobTemplate.objects.none()
    return course.templates.filter(status=JobTemplate.Status.PUBLISHED)


def visible_clusters(user) -> QuerySet[Cluster]:
    from clusters.models import Cluster

    if is_admin(user):
        return Cluster.objects.all()
    return Cluster.objects.filter(courses__in=courses_for(user), enabled=True).distinct()


def launchable_clusters(user, course: Course, template: JobTemplate | None = None) -> QuerySet[Cluster]:
    from clusters.models import Cluster

    if role_in(user, course) is None and not is_admin(user):
        return Cluster.objects.none()
    clusters = course.clusters.filter(enabled=True)
    if template is not None:
        from clusters.kinds import kinds_running

        clusters = clusters.filter(kind__in=kinds_running(template.backend))
        if template.needs_mpi_operator:
            clusters = clusters.filter(has_mpi_operator=True)
    return clusters


def check_launch(user, course: Course, template: JobTemplate, cluster: Cluster) -> None:
    """Raise LaunchRefused with a message the user can act on, unless they may launch this here."""
    if not user.is_active:
        raise LaunchRefused("Your account is disabled.")
    if role_in(user, course) is None and not is_admin(user):
        raise LaunchRefused(f"You are not enrolled in {course.name}.")
    refusal = terms.launch_refusal(course, teaches=may_teach(user, course))
    if refusal:
        raise LaunchRefused(refusal)
    if not launchable_templates(user, course).filter(pk=template.pk).exists():
        raise LaunchRefused(f"The template “{template.name}” is not published for {course.name}.")
    if not launchable_clusters(user, course, template).filter(pk=cluster.pk).exists():
        raise LaunchRefused(
            f"The cluster “{cluster.name}” is not available to {course.name} for {template.get_backend_display()} "
            "jobs. Pick one of the course's clusters."
        )


def may_author(user, template: JobTemplate) -> bool:
    """Admins edit anything; instructors edit their own course templates, never built-in or shared ones."""
    if is_admin(user):
        return True
    course_ids = set(template.courses.values_list("pk", flat=True))
    taught = set(teaching_courses(user).values_list("pk", flat=True))
    return not template.builtin and bool(course_ids) and course_ids <= taught


def get_authorable_template(user, slug: str, *, write: bool = False) -> JobTemplate:
    """write=True: about to save or publish it; a template of a course whose term has ended stays as it was."""
    from jobs.models import JobTemplate

    template = JobTemplate.objects.filter(slug=slug).first()
    if template is None or not may_author(user, template):
        raise Http404("No such template.")
    if write:
        for course in template.courses.all():
            terms.check_writable(course)
    return template


def template_read_only(template: JobTemplate) -> str | None:
    """Why the template can no longer change (a course of it has ended), or None."""
    if template.pk is None:
        return None
    ended = next((c for c in template.courses.all() if terms.has_ended(c)), None)
    return terms.read_only_message(ended) if ended else None


def get_node(user, node_id) -> Node:
    """A compute node's page and telemetry: admins only (a node mixes every course's jobs); 404 for anyone else."""
    from telemetry.models import Node

    if not is_admin(user):
        raise Http404("No such node.")
    try:
        return Node.objects.select_related("cluster").get(pk=int(node_id))
    except (Node.DoesNotExist, ValueError, TypeError):
        raise Http404("No such node.") from None


def get_files_cluster(user, cluster_id) -> Cluster:
    """A cluster whose file browser (the user's own lab space on it) the user may open: one of their courses'
    clusters (any for an admin); 404 for anything else. The space is always the user's own."""
    try:
        return visible_clusters(user).get(pk=int(cluster_id))
    except (ValueError, TypeError, visible_clusters(user).model.DoesNotExist):
        raise Http404("No such cluster.") from None


def get_job_files(user, job_id, *, write: bool = False) -> Job:
    """A job whose run directory the user may browse: anyone who may see the job (get_job). Changing its files
    (upload, rename, delete) is for the job's owner; a course's staff read them (403 on a change)."""
    job = get_job(user, job_id)
    if write and job.owner_id != user.pk:
        raise PermissionDenied("Only the student who launched this job changes its files; you may read them.")
    return job
