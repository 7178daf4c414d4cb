"""The instructor's lab sessions page: book GPUs for a live lab, see what the cluster holds, cancel a booking."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from . import access, lab_sessions, terms
from .lab_session_forms import LabSessionForm
from .models import LIVE_LAB_SESSION_STATES, LabSessionState

PAST_SHOWN = 20


@login_required
def lab_sessions_page(request, slug: str):
    course = access.get_managed_course(request.user, slug, access.LAB_SESSIONS, write=request.method == "POST")
    form = LabSessionForm(request.POST or None, course=course)
    if request.method == "POST" and form.is_valid():
        try:
            session = lab_sessions.book(course, form.booking(), actor=request.user)
        except lab_sessions.BookingRefused as refused:
            form.add_refusal(refused.errors)
        else:
            messages.success(request, f"Booked. The portal is asking {session.cluster.display_name} to hold the GPUs.")
            return redirect("courses:lab_sessions", slug=course.slug)
    sessions = course.lab_sessions.select_related("cluster", "booked_by").order_by("-starts_at")
    now = timezone.now()
    coming = sorted(sessions.filter(state__in=LIVE_LAB_SESSION_STATES, ends_at__gt=now), key=lambda s: s.starts_at)
    context = {
        "course": course,
        "form": form,
        "coming": coming,
        "asking": any(s.state == LabSessionState.BOOKED for s in coming),  # the page follows until the cluster answers
        "past": sessions.exclude(state__in=LIVE_LAB_SESSION_STATES, ends_at__gt=now)[:PAST_SHOWN],
        "read_only": terms.has_ended(course),
        "no_cluster": not lab_sessions.lab_clusters(course).exists(),
        "booking_notes": lab_sessions.booking_notes(course),
    }
    return render(request, "courses/lab_sessions.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def cancel_lab_session(request, slug: str, session_id: int):
    session = access.get_lab_session(request.user, slug, session_id, write=True)
    if lab_sessions.cancel(session, actor=request.user):
        messages.success(request, "Cancelled. The cluster's reservation is being removed.")
    else:
        messages.info(request, "That session had already ended or been cancelled.")
    return redirect("courses:lab_sessions", slug=session.course.slug)
