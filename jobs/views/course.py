"""A course's jobs for its teachers: every student's jobs filtered, and several cancelled at once.

Served under /courses/<slug>/ beside the course's other pages (portal/urls.py joins them in one namespace).
"""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from core.choices import ACTIVE_STATES
from courses.models import Role
from jobs import access, run_columns
from jobs.cancellation import CancelRefused, request_cancel
from jobs.course_queue import course_queues
from jobs.filters import JobFilterForm
from jobs.models import Job
from jobs.rightsize import class_efficiency


@login_required
def course_jobs(request, slug: str):
    """The instructor's view of a course: every student's jobs, filtered by state, student and template."""
    course = access.get_course(request.user, slug, teach=True)
    form = JobFilterForm(request.GET or None)
    jobs = form.apply(access.visible_jobs(request.user).filter(course=course))
    page = Paginator(jobs.for_table(), 50).get_page(request.GET.get("page"))
    rows = list(page.object_list)
    context = {"course": course, "form": form, "page": page, "jobs": rows, "show_owner": True}
    context |= run_columns.annotate(rows)
    context["bulk"] = True  # rows get a checkbox for "Cancel selected"
    if request.headers.get("HX-Request"):  # the table's 5-second refresh: its rows only
        return render(request, "jobs/_job_rows.html", context)
    # Unfinished jobs per student from the (course, state) index, not a join of every enrollment with every job.
    active = dict(
        Job.objects.filter(course=course, state__in=ACTIVE_STATES)
        .values_list("owner_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    students = list(course.enrollments.select_related("user"))
    for enrollment in students:
        enrollment.active = active.get(enrollment.user_id, 0)
    roster = sorted((e.user for e in students if e.role == Role.STUDENT), key=lambda u: u.username)
    context |= {"enrollments": students, "roster": roster, "templates": course.templates.only("slug", "name")}
    context["manages"] = access.may_manage(request.user, course)  # a TA gets no links to the instructor's pages
    context["efficiency"] = class_efficiency(course)
    context["course_queues"] = course_queues(course, timezone.now())
    return render(request, "courses/course_jobs.html", context)


@login_required
@require_POST
def cancel_jobs(request, slug: str):
    """Cancel the jobs an instructor ticked: each one found through the access helper, moved by the state machine
    and recorded with its actor, exactly as its own Cancel button would."""
    course = access.get_course(request.user, slug, teach=True)
    ids = []
    for value in request.POST.getlist("job"):
        try:
            ids.append(uuid.UUID(value))
        except ValueError:
            continue
    jobs = access.visible_jobs(request.user).filter(course=course, pk__in=ids).select_related("cluster")
    asked, ended = 0, 0
    for job in jobs:
        try:
            request_cancel(request.user, job)
            asked += 1
        except CancelRefused:
            ended += 1
    if not ids:
        messages.warning(request, "Tick the jobs to cancel first, then press “Cancel selected”.")
    else:
        note = f" {ended} had already ended." if ended else ""
        messages.info(request, f"Cancelling {asked} job{'' if asked == 1 else 's'}.{note}")
    back = request.POST.get("next", "")  # the page with its filters
    if url_has_allowed_host_and_scheme(back, {request.get_host()}, require_https=request.is_secure()):
        return redirect(back)
    return redirect("courses:jobs", slug=course.slug)
