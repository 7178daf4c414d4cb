from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count
from django.shortcuts import redirect, render

from jobs.forms import CourseFilterForm, RosterUploadForm
from jobs.models import Job
from jobs.states import ACTIVE_STATES

from . import access
from .roster import import_roster


@login_required
def course_jobs(request, slug: str):
    """The instructor's view of a course: every student's jobs, filtered by state, student and template."""
    course = access.get_course(request.user, slug, teach=True)
    form = CourseFilterForm(request.GET or None)
    jobs = access.visible_jobs(request.user).filter(course=course)
    if form.is_valid():
        if form.cleaned_data["state"]:
            jobs = jobs.filter(state=form.cleaned_data["state"])
        if form.cleaned_data["student"]:
            jobs = jobs.filter(owner__username__icontains=form.cleaned_data["student"])
        if form.cleaned_data["template"]:
            jobs = jobs.filter(template__slug=form.cleaned_data["template"])
    page = Paginator(jobs.for_table(), 50).get_page(request.GET.get("page"))
    context = {"course": course, "form": form, "page": page, "jobs": page.object_list, "show_owner": True}
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
    context |= {"enrollments": students, "templates": course.templates.all()}
    return render(request, "courses/course_jobs.html", context)


@login_required
def roster_upload(request, slug: str):
    course = access.get_course(request.user, slug, teach=True)
    form = RosterUploadForm(request.POST or None, request.FILES or None)
    result = None
    if request.method == "POST" and form.is_valid():
        result = import_roster(course, form.cleaned_data["roster"])
        if result.ok:
            messages.success(request, result.summary())
            return redirect("courses:roster", slug=course.slug)
    enrollments = course.enrollments.select_related("user").order_by("role", "user__username")
    context = {"course": course, "form": form, "result": result, "enrollments": enrollments}
    return render(request, "courses/roster.html", context, status=400 if result and not result.ok else 200)
