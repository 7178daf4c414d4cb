"""Copy to a new term: an instructor of the course (ended or not) makes the course's next offering."""

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils import timezone

from . import access, terms
from .copying import copy_to_new_term
from .forms import CopyTermForm

DEFAULT_TERM = timedelta(days=120)


def suggested_term(course) -> dict:
    """The next term: from the old end (or today, if later), as long as the old term was."""
    today = timezone.localtime().replace(hour=9, minute=0, second=0, microsecond=0)
    if not terms.has_term(course):
        return {"term_starts_at": today, "term_ends_at": today + DEFAULT_TERM}
    starts = max(today, timezone.localtime(course.term_ends_at))
    return {"term_starts_at": starts, "term_ends_at": starts + (course.term_ends_at - course.term_starts_at)}


@login_required
def copy_course(request, slug: str):
    course = access.get_copyable_course(request.user, slug)
    initial = {"name": course.name, "slug": f"{course.slug}-next"[:50], **suggested_term(course)}
    form = CopyTermForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        new = copy_to_new_term(
            course,
            actor=request.user,
            name=data["name"],
            slug=data["slug"],
            starts=data["term_starts_at"],
            ends=data["term_ends_at"],
        )
        messages.success(
            request,
            f"Created {new.name} for {terms.when(data['term_starts_at'])} to {terms.when(data['term_ends_at'])} with "
            f"{new.templates.count()} template(s). Import its roster next.",
        )
        return redirect("courses:jobs", slug=new.slug)
    context = {"course": course, "form": form, "templates": course.templates.order_by("name")}
    context["clusters"] = course.clusters.order_by("name")
    return render(request, "courses/copy.html", context, status=400 if form.errors else 200)
