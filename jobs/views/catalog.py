from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.shortcuts import render

from courses import access
from jobs.models import JobTemplate


@login_required
def catalog(request):
    """Every template the user may launch, grouped by course."""
    courses = access.courses_for(request.user).prefetch_related(
        Prefetch(
            "templates",
            queryset=JobTemplate.objects.filter(status=JobTemplate.Status.PUBLISHED),
            to_attr="published_templates",
        )
    )
    teaching = set(access.teaching_courses(request.user).values_list("pk", flat=True))
    return render(request, "jobs/catalog.html", {"courses": courses, "teaching": teaching})
