from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from jobs import access


@login_required
def catalog(request):
    """Every template the user may launch, grouped by course: only those a cluster of the course can run."""
    courses = access.template_catalog(request.user)
    teaching = {course.pk for course in courses if course.teaches}
    return render(request, "jobs/catalog.html", {"courses": courses, "teaching": teaching})
