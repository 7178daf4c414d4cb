"""The instructor's roster page: who is in the course, import a CSV or add one person, change a role, remove
someone, and resend invitations to those who have not signed in. Every view asks access.get_roster_course."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from . import access, invitations, roster_changes, roster_import_views, terms
from .forms import AddPersonForm, RoleForm, RosterUploadForm
from .models import Enrollment, Role

RECENT_CHANGES = 50


def _page(request, course, *, add=None, status=200):
    enrollments = list(course.enrollments.select_related("user").order_by("user__username"))
    pending = invitations.not_signed_in(course)
    invitation_of = {e.user_id: e.invitation for e in pending}
    for enrollment in enrollments:
        enrollment.pending = enrollment.user_id in invitation_of
        enrollment.invitation = invitation_of.get(enrollment.user_id)
    context = {
        "course": course,
        "enrollments": enrollments,
        "pending": pending,
        "invitable": sum(invitations.invitable(e.user) for e in pending),
        "roles": Role.choices,
        "upload": RosterUploadForm(),
        "add": add or AddPersonForm(),
        "changes": course.roster_changes.all()[:RECENT_CHANGES],
        "read_only": terms.has_ended(course),
    }
    return render(request, "courses/roster.html", context, status=status)


@login_required
def roster_page(request, slug: str):
    """GET: the people of the course; POST: a roster file, previewed (roster_import_views: nothing is saved yet)."""
    course = access.get_roster_course(request.user, slug, write=request.method == "POST")
    if request.method == "POST":
        return roster_import_views.preview(request, course)
    return _page(request, course)


@login_required
@require_POST
def add_person(request, slug: str):
    course = access.get_roster_course(request.user, slug, write=True)
    form = AddPersonForm(request.POST)
    if not form.is_valid():
        return _page(request, course, add=form, status=400)
    username, email, role = (form.cleaned_data[k] for k in ("username", "email", "role"))
    User = get_user_model()
    with transaction.atomic():
        user = User.objects.filter(username__iexact=username).first()
        if user is not None and Enrollment.objects.filter(course=course, user=user).exists():
            messages.info(request, f"{user.get_username()} is already in {course.name}; change their role below.")
            return redirect("courses:roster", slug=course.slug)
        if user is None and not email:
            form.add_error("email", f"There is no account {username} yet: give an email address to invite them.")
            return _page(request, course, add=form, status=400)
        created = user is None
        if user is None:
            user = User(username=username, email=email)
            user.set_unusable_password()
            user.save()
        roster_changes.enroll(course, user, role, actor=request.user)
        invited = created and invitations.invite(course, user, invited_by=request.user)
    if invited:
        messages.success(request, f"{username} added as {Role(role).label.lower()}; an invitation goes to {email}.")
    else:
        messages.success(request, f"{user.get_username()} added with their existing account; they log in as before.")
    return redirect("courses:roster", slug=course.slug)


def _enrollment(course, user_id) -> Enrollment:
    return get_object_or_404(Enrollment.objects.select_related("user"), course=course, user_id=user_id)


@login_required
@require_POST
def change_role(request, slug: str, user_id: int):
    course = access.get_roster_course(request.user, slug, write=True)
    enrollment = _enrollment(course, user_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Pick one of student, teaching assistant or instructor.")
        return redirect("courses:roster", slug=course.slug)
    role = form.cleaned_data["role"]
    try:
        changed = roster_changes.set_role(course, enrollment, role, actor=request.user)
    except roster_changes.LastInstructor as exc:
        messages.error(request, str(exc))
        return redirect("courses:roster", slug=course.slug)
    name = enrollment.user.get_username()
    if changed:
        messages.success(request, f"{name} is now {Role(role).label.lower()} of {course.name}.")
    else:
        messages.info(request, f"{name} already was {Role(role).label.lower()}.")
    return redirect("courses:roster", slug=course.slug)


@login_required
def remove_person(request, slug: str, user_id: int):
    """GET: what removing this person does, and a button; POST: remove them."""
    course = access.get_roster_course(request.user, slug, write=request.method == "POST")
    enrollment = _enrollment(course, user_id)
    if request.method == "POST":
        try:
            roster_changes.remove(course, enrollment, actor=request.user)
        except roster_changes.LastInstructor as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"{enrollment.user.get_username()} was removed from {course.name}.")
        return redirect("courses:roster", slug=course.slug)
    # Through the reverse relation: courses/ does not import jobs/ (the layers go the other way).
    jobs = course.jobs.filter(owner=enrollment.user).count()
    context = {"course": course, "enrollment": enrollment, "jobs": jobs}
    return render(request, "courses/roster_remove.html", context)


@login_required
@require_POST
def resend_invitation(request, slug: str, user_id: int):
    course = access.get_roster_course(request.user, slug, write=True)
    enrollment = _enrollment(course, user_id)
    user = enrollment.user
    if invitations.invite(course, user, invited_by=request.user):
        messages.success(request, f"A new invitation goes to {user.email}.")
    elif not invitations.invitable(user):
        messages.warning(request, f"{user.get_username()} cannot be invited: {_why_not(user)}")
    else:
        messages.info(request, f"An invitation to {user.get_username()} was queued less than a minute ago.")
    return redirect("courses:roster", slug=course.slug)


def _why_not(user) -> str:
    if user.last_login is not None:
        return "they have signed in already."
    if not user.email:
        return "their account has no email address. Ask an admin to add one."
    return "their account is disabled."


@login_required
@require_POST
def resend_all(request, slug: str):
    course = access.get_roster_course(request.user, slug, write=True)
    users = [e.user for e in invitations.not_signed_in(course)]
    count = invitations.invite_all(course, users, invited_by=request.user)
    skipped = len(users) - count
    note = f" {skipped} skipped (no email address, disabled, or invited a minute ago)." if skipped else ""
    messages.success(request, f"{count} invitation{'' if count == 1 else 's'} queued.{note}")
    return redirect("courses:roster", slug=course.slug)
