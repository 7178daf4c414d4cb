"""The one place that answers "may this user see or act on this job or template?", built on the course questions.

Views, the REST API, WebSocket consumers and Celery tasks all ask here (the course questions of courses/access.py
are handed on, so a caller asks one module). Anything a user may not see is reported as missing (Http404), so
the answer never reveals that another student's job exists.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch, Q, QuerySet
from django.http import Http404

from clusters.kinds import kind_of, template_backend
from clusters.models import Cluster
from core import logs
from courses import terms
from courses.access import (
    courses_for,
    get_copyable_course,
    get_course,
    get_files_cluster,
    get_managed_course,
    get_roster_course,
    is_admin,
    launchable_clusters,
    managed_courses,
    may_manage,
    may_teach,
    role_in,
    teaching_courses,
    visible_clusters,
)
from courses.models import Course

from .models import CourseTemplate, Job, JobQuerySet, JobTemplate

__all__ = [
    "LaunchRefused",
    "check_launch",
    "courses_for",
    "get_authorable_template",
    "get_copyable_course",
    "get_copyable_template",
    "get_course",
    "get_files_cluster",
    "get_job",
    "get_job_dashboard",
    "get_job_files",
    "get_job_notebook",
    "get_job_terminal",
    "get_managed_course",
    "get_roster_course",
    "is_admin",
    "launchable_clusters",
    "launchable_templates",
    "managed_courses",
    "may_act",
    "may_author",
    "may_manage",
    "may_teach",
    "role_in",
    "teaching_courses",
    "template_catalog",
    "template_read_only",
    "visible_clusters",
    "visible_jobs",
    "visible_templates",
]


class LaunchRefused(Exception):
    """The user may not launch this template on this cluster; the message says why, for the user."""


def visible_jobs(user) -> JobQuerySet:
    """Jobs the user may see: their own, every job of a course they teach, everything for an admin."""
    if is_admin(user):
        return Job.objects.all()
    if not user.is_authenticated:
        return Job.objects.none()
    return Job.objects.filter(Q(owner=user) | Q(course__in=teaching_courses(user)))


def may_act(user, job: Job) -> bool:
    """Beyond seeing, cancelling and cloning a job: act on its server (scale, try it, load test) and its idle clock
    (Keep it). Its owner, the course's instructors and admins; a TA of the course sees and cancels it only."""
    return job.owner_id == user.pk or may_manage(user, job.course)


def get_job(user, job_id, *, act: bool = False) -> Job:
    """A job the user may see, cancel, clone and read the log of; 404 for anything else.

    act=True: the caller is about to act on its server or idle clock (may_act); a TA gets 403."""
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
    if act and not may_act(user, job):
        raise PermissionDenied(NOT_YOURS_TO_ACT)
    return job


NOT_YOURS_TO_ACT = (
    "Only the student who launched this job and the course's instructors act on it; you may see it and cancel it."
)


def visible_templates(user) -> QuerySet[JobTemplate]:
    """Templates the user may read: published ones of their courses; drafts too in courses they manage."""
    if is_admin(user):
        return JobTemplate.objects.all()
    published = Q(status=JobTemplate.Status.PUBLISHED, courses__in=courses_for(user))
    authored = Q(courses__in=managed_courses(user))
    return JobTemplate.objects.filter(published | authored).distinct()


def template_catalog(user) -> Sequence[Course]:
    """The user's courses, each with `launchable` (its published templates that an enabled cluster of the course can
    run, in the order the course's instructors set), `teaches`, `manages` and `launch_refusal` (why nothing may be
    launched there now: the term; else None). The catalog page shows all of it; GET /api/v1/templates/ lists the
    templates of the courses without a refusal. Five queries.
    """
    published = CourseTemplate.objects.filter(template__status=JobTemplate.Status.PUBLISHED).select_related("template")
    courses = list(
        courses_for(user).prefetch_related(
            Prefetch("template_placements", queryset=published, to_attr="published_placements"),
            Prefetch("clusters", queryset=Cluster.objects.filter(enabled=True), to_attr="enabled_clusters"),
        )
    )
    teaching = set(teaching_courses(user).values_list("pk", flat=True))
    managing = set(managed_courses(user).values_list("pk", flat=True))
    for course in courses:
        course.launchable = [
            p.template
            for p in course.published_placements
            if any(_runs(cluster, p.template) for cluster in course.enabled_clusters)
        ]
        course.teaches = course.pk in teaching
        course.manages = course.pk in managing
        course.launch_refusal = terms.launch_refusal(course, teaches=course.teaches)
    return courses


def _runs(cluster: Cluster, template: JobTemplate) -> bool:
    """The cluster's kind runs the template's backend, and the cluster what it needs (an operator Test connection
    found)."""
    return template_backend(cluster.kind) == template.backend and kind_of(cluster.kind).runs_template(cluster, template)


def launchable_templates(user, course: Course) -> QuerySet[JobTemplate]:
    if role_in(user, course) is None and not is_admin(user):
        return JobTemplate.objects.none()
    return course.templates.filter(status=JobTemplate.Status.PUBLISHED)


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


def may_author(user, template: JobTemplate, *, managed: set[int] | None = None) -> bool:
    """Admins edit anything; instructors edit their own course templates, never built-in or shared ones. A TA none.
    `managed`: the ids of the courses the user manages, where the caller asks for many templates (a list page, whose
    templates' courses are prefetched)."""
    if is_admin(user):
        return True
    course_ids = {course.pk for course in template.courses.all()}
    if managed is None:
        managed = set(managed_courses(user).values_list("pk", flat=True))
    return not template.builtin and bool(course_ids) and course_ids <= managed


def get_authorable_template(user, slug: str, *, write: bool = False) -> JobTemplate:
    """write=True: about to save or publish it; a template of a course whose term has ended stays as it was."""
    template = JobTemplate.objects.filter(slug=slug).first()
    if template is None or not may_author(user, template):
        raise Http404("No such template.")
    if write:
        for course in template.courses.all():
            terms.check_writable(course)
    return template


def get_copyable_template(user, slug: str) -> JobTemplate:
    """A template an instructor may copy into a course they manage (the caller checks that course with
    get_managed_course): a built-in one, or any of a course they manage (a shared one they cannot edit). 404 for
    anything else; a TA manages nothing and copies nothing."""
    copyable = Q(builtin=True, status=JobTemplate.Status.PUBLISHED) | Q(courses__in=managed_courses(user))
    template = JobTemplate.objects.filter(copyable, slug=slug).first()
    if template is None or not (is_admin(user) or managed_courses(user).exists()):
        raise Http404("No such template.")
    return template


def template_read_only(template: JobTemplate) -> str | None:
    """Why the template can no longer change (a course of it has ended), or None."""
    if template.pk is None:
        return None
    ended = next((c for c in template.courses.all() if terms.has_ended(c)), None)
    return terms.read_only_message(ended) if ended else None


def get_job_files(user, job_id, *, write: bool = False) -> Job:
    """A job whose run directory the user may browse: anyone who may see the job (get_job). Changing its files
    (upload, rename, delete) is for the job's owner; a course's staff read them (403 on a change)."""
    job = get_job(user, job_id)
    if write and job.owner_id != user.pk:
        raise PermissionDenied("Only the student who launched this job changes its files; you may read them.")
    return job


def get_job_terminal(user, job_id) -> tuple[Job, bool]:
    """A job the user may open a shell in, and whether they open it as staff: its owner; an instructor of its course
    or an admin (the student is told, and the job's timeline records it). A TA gets 403; anyone else 404."""
    return _get_job_session(user, job_id, "open its terminal")


def get_job_notebook(user, job_id) -> Job:
    """A job whose JupyterLab the user may open (every proxied request and socket asks): its owner only. JupyterLab's
    pages run scripts from the student's own server on the portal's origin, so anyone else who opened them would lend
    that server their portal session. Others who may see the job get 403 (its session page still shows them the
    clock and charts); anyone else 404."""
    job = get_job(user, job_id)
    if job.owner_id != user.pk:
        raise PermissionDenied(
            "Only the student who launched this JupyterLab may open it: its pages run their server's code in the "
            "browser. Its session page shows you the time left and the GPU charts."
        )
    return job


def get_job_dashboard(user, job_id) -> Job:
    """A job whose dashboard (a Ray cluster's, proxied under /jobs/<id>/dashboard/) the user may open: its owner only,
    as for JupyterLab, and for the same reason: the dashboard is served by the job's own Ray head, where the student's
    code runs, and its pages run on the portal's origin. Others who may see the job get 403 (the job page tells them
    whose it is); anyone else 404."""
    job = get_job(user, job_id)
    if job.owner_id != user.pk:
        raise PermissionDenied(
            "Only the student who launched this job may open its dashboard: its pages come from the job's own "
            "cluster and run in the browser. The job page shows you its state, log and charts."
        )
    return job


def _get_job_session(user, job_id, action: str) -> tuple[Job, bool]:
    job = get_job(user, job_id)
    if job.owner_id == user.pk:
        return job, False
    if may_manage(user, job.course):
        return job, True
    raise PermissionDenied(f"Only the student who launched this job and the course's instructors {action}.")
