from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.shortcuts import render

from clusters.kinds import template_backend
from clusters.models import Cluster
from courses import terms
from jobs import access
from jobs.models import JobTemplate


@login_required
def catalog(request):
    """Every template the user may launch, grouped by course: only those a cluster of the course can run."""
    courses = access.courses_for(request.user).prefetch_related(
        Prefetch(
            "templates",
            queryset=JobTemplate.objects.filter(status=JobTemplate.Status.PUBLISHED),
            to_attr="published_templates",
        ),
        Prefetch("clusters", queryset=Cluster.objects.filter(enabled=True), to_attr="enabled_clusters"),
    )
    for course in courses:
        kinds = {template_backend(cluster.kind) for cluster in course.enabled_clusters}
        mpi = any(cluster.has_mpi_operator for cluster in course.enabled_clusters)
        course.launchable = [
            t for t in course.published_templates if t.backend in kinds and (mpi or not t.needs_mpi_operator)
        ]
    teaching = set(access.teaching_courses(request.user).values_list("pk", flat=True))
    for course in courses:
        course.teaches = course.pk in teaching
        course.launch_refusal = terms.launch_refusal(course, teaches=course.teaches)
    return render(request, "jobs/catalog.html", {"courses": courses, "teaching": teaching})
