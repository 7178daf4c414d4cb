from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from courses.lab_sessions import coming_sessions
from courses.models import LabSession
from jobs import access


@login_required
def catalog(request):
    """Every template the user may launch, grouped by course: only those a cluster of the course can run."""
    courses = access.template_catalog(request.user)
    sessions: dict[int, LabSession] = {}  # each course's lab session on now or next, in one query
    for session in coming_sessions().filter(course__in=[course.pk for course in courses]):
        sessions.setdefault(session.course_id, session)
    for course in courses:
        course.lab_session = sessions.get(course.pk)
    return render(request, "jobs/catalog.html", {"courses": courses})
