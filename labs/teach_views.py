"""The teachers' side of a lab: loading a built-in lab into the course (instructors), the live progress grid, the
grading CSV, notes to the class or one student, and marking short answers (instructors and TAs)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core import csv_cells

from . import access, grid, live
from .builtin import LabFileInvalid, load_builtin_lab
from .forms import LabSessionForm, LoadLabForm, MarkForm, NoteForm
from .models import Answer
from .notes import post_note
from .progress import State


@login_required
@require_POST
def load_lab(request, slug: str):
    course = access.get_managed_course(request.user, slug, "load labs into it", write=True)
    form = LoadLabForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Pick one of the built-in labs.")
        return redirect("labs:list", slug)
    try:
        lab = load_builtin_lab(course, form.cleaned_data["lab"])
    except LabFileInvalid as exc:
        messages.error(request, f"{exc} Ask an administrator.")
        return redirect("labs:list", slug)
    messages.success(request, f"Loaded “{lab.title}”. Students see it under the course's labs.")
    return redirect("labs:grid", slug, lab.slug)


@login_required
def progress_grid(request, slug: str, lab_slug: str):
    lab = access.get_lab(request.user, slug, lab_slug, teach=True)
    students = access.students_of(lab.course)
    rows = grid.rows(lab, students)
    steps = [cell.step for cell in rows[0].cells] if rows else []
    context = {
        "lab": lab,
        "course": lab.course,
        "rows": rows,
        "steps": steps,
        "pace": grid.pace(lab, rows),
        "note_form": NoteForm(students=students),
        "session_form": LabSessionForm(course=lab.course, initial={"lab_session": lab.lab_session_id}),
        "manages": access.may_manage(request.user, lab.course),
        "answers": Answer.objects.filter(step__section__lab=lab, accepted=None).select_related("step", "student"),
        "State": State,
    }
    return render(request, "labs/grid.html", context)


@login_required
def grading_csv(request, slug: str, lab_slug: str):
    """Per student and step: the state, when it was done, minutes from the first run to done, the figure read."""
    lab = access.get_lab(request.user, slug, lab_slug, teach=True)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{lab.course.slug}-{lab.slug}-progress.csv"'
    out = csv_cells.writer(response)
    out.writerow(["student", "section", "step", "state", "done_at", "minutes", "figure", "runs", "answer"])
    for row in grid.rows(lab, access.students_of(lab.course)):
        for cell in row.cells:
            first = min((j.created_at for j in cell.jobs), default=None)
            minutes = round((cell.done_at - first).total_seconds() / 60, 1) if cell.done_at and first else ""
            out.writerow([
                row.student.username,  # type: ignore[attr-defined]
                cell.step.section.title,
                cell.step.title,
                cell.state,
                cell.done_at.isoformat() if cell.done_at else "",
                minutes,
                "" if cell.figure is None else cell.figure,
                len(cell.jobs),
                cell.answer.text if cell.answer else "",
            ])  # fmt: skip
    return response


@login_required
@require_POST
def note(request, slug: str, lab_slug: str):
    lab = access.get_lab(request.user, slug, lab_slug, teach=True)
    form = NoteForm(request.POST, students=access.students_of(lab.course))
    if form.is_valid():
        post_note(lab, request.user, form.cleaned_data["text"], form.cleaned_data["student"])
        who = form.cleaned_data["student"] or "the class"
        messages.success(request, f"Note sent to {who}: it shows on the lab page and arrives as a notification.")
    else:
        messages.error(request, "Write the note (at most 2,000 characters) and pick a student of the course.")
    return redirect("labs:grid", slug, lab_slug)


@login_required
@require_POST
def mark(request, slug: str, lab_slug: str, answer_id: int):
    lab = access.get_lab(request.user, slug, lab_slug, teach=True)
    answer = get_object_or_404(Answer.objects.select_related("student"), pk=answer_id, step__section__lab=lab)
    form = MarkForm(request.POST)
    if form.is_valid():
        answer.accepted, answer.marked_by = form.cleaned_data["accepted"], request.user
        answer.save(update_fields=["accepted", "marked_by"])
        live.send_rows_after_commit([lab], answer.student)
    return redirect("labs:grid", slug, lab_slug)


@login_required
@require_POST
def tie_session(request, slug: str, lab_slug: str):
    """Run the lab in one of the course's booked lab sessions: its page then counts down to the session's end."""
    access.get_managed_course(request.user, slug, "tie its labs to lab sessions", write=True)
    lab = access.get_lab(request.user, slug, lab_slug, teach=True)
    form = LabSessionForm(request.POST, course=lab.course)
    if form.is_valid():
        lab.lab_session = form.cleaned_data["lab_session"]
        lab.save(update_fields=["lab_session"])
        messages.success(request, f"“{lab.title}” now runs in {lab.lab_session or 'no lab session'}.")
    else:
        messages.error(request, "Pick one of the course's booked lab sessions.")
    return redirect("labs:grid", slug, lab_slug)
