"""Importing a roster file in two steps: the upload shows what would happen to each line and saves nothing; Import
saves that plan. The rows read wait in the instructor's session under a one-time token (never posted back, so what
is saved is what was previewed), and are planned again when saved. Both steps ask access.get_roster_course."""

from __future__ import annotations

import secrets
from dataclasses import asdict

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.shortcuts import redirect, render
from django.utils.crypto import constant_time_compare
from django.views.decorators.http import require_POST

from . import access, invitations, roster_file
from .forms import RosterUploadForm
from .roster import ENROL, NEW, ROLE, SAME, RosterPlan, RosterRow, plan_roster, save_roster

PREVIEW = "roster-preview"  # the session key: {"course": pk, "token": …, "rows": [...]}, the last file previewed
NOTES_SHOWN = 20


def preview(request, course):
    """The upload (POST to the roster page): what saving the file would do, line by line."""
    upload = RosterUploadForm(request.POST, request.FILES)
    if not upload.is_valid():
        return render(request, "courses/roster_preview.html", {"course": course, "upload": upload}, status=400)
    read = roster_file.read(upload.cleaned_data["roster"])
    plan = plan_roster(course, read.rows) if not read.errors else RosterPlan()
    errors = read.all_errors if read.errors else plan.errors
    context = {
        "course": course,
        "upload": RosterUploadForm(),
        "plan": plan,
        "errors": errors,
        "notes": read.notes + plan.notes,
        "counts": {outcome: plan.count(outcome) for outcome in (NEW, ENROL, ROLE, SAME)},
        "invited": sum(1 for line in plan.lines if line.outcome == NEW and line.row.email),
        "shows": {c: any(getattr(r, c) for r in read.rows) for c in ("first_name", "section", "cluster_username")},
        "token": None if errors else _keep(request, course, read.rows),
    }
    return render(request, "courses/roster_preview.html", context, status=400 if errors else 200)


@login_required
@require_POST
def confirm_import(request, slug: str):
    """Import: save the plan the instructor saw (planned again now: what changed meanwhile is counted as it is)."""
    course = access.get_roster_course(request.user, slug, write=True)
    rows = _take(request, course, request.POST.get("preview", ""))
    if rows is None:
        messages.error(
            request,
            "That preview is no longer open: it was imported already, or another file was previewed since. "
            "Upload the file again.",
        )
        return redirect("courses:roster", slug=course.slug)
    with transaction.atomic():
        result = save_roster(course, rows, actor=request.user)
        invited = invitations.invite_all(course, result.new_accounts, invited_by=request.user) if result.ok else 0
    if not result.ok:
        messages.error(request, result.summary() + " " + " ".join(result.errors[:NOTES_SHOWN]))
        return redirect("courses:roster", slug=course.slug)
    note = f" {invited} invitation{'' if invited == 1 else 's'} to set a password queued." if invited else ""
    messages.success(request, result.summary() + note)
    for line in result.notes[:NOTES_SHOWN]:
        messages.info(request, line)
    if len(result.notes) > NOTES_SHOWN:
        messages.info(request, f"… and {len(result.notes) - NOTES_SHOWN} more like these.")
    return redirect("courses:roster", slug=course.slug)


def _keep(request, course, rows: list[RosterRow]) -> str:
    token = secrets.token_urlsafe(16)
    request.session[PREVIEW] = {"course": course.pk, "token": token, "rows": [asdict(row) for row in rows]}
    return token


def _take(request, course, token: str) -> list[RosterRow] | None:
    """The rows previewed under this token, once; None when there are none (taken, replaced, another course's)."""
    kept = request.session.get(PREVIEW)
    if not kept or kept.get("course") != course.pk or not constant_time_compare(kept.get("token", ""), token):
        return None
    del request.session[PREVIEW]
    return [RosterRow(**row) for row in kept["rows"]]
