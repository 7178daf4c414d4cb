"""The instructor's lab editor, the lab's side: a new lab (blank, a built-in one, or a lab file), its title and summary,
its sections (added, renamed, moved, removed after a warning), its export as a lab file, and the Markdown preview.
Only the course's instructors (and admins): a TA is told so (403), anyone else finds nothing (404) (labs/access.py).
The steps' pages are labs/step_views.py."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from courses import terms

from . import access, editing, lab_files
from .edit_forms import ImportForm, LabForm, SectionForm
from .forms import LoadLabForm
from .loading import LabFileInvalid, free_lab_slug, import_lab
from .markdown import render as markdown
from .models import Lab, Section
from .specs import check_in_words

MOVES = {"up": -1, "down": 1}


def editor_url(lab: Lab, anchor: str = "") -> str:
    return reverse("labs:edit", args=[lab.course.slug, lab.slug]) + (f"#{anchor}" if anchor else "")


def read_only(course) -> str | None:
    return terms.read_only_message(course) if terms.has_ended(course) else None


@login_required
def lab_new(request, slug: str):
    """A new lab: blank, loaded from a built-in one, or imported from a lab file (each its own form here)."""
    writing = request.method == "POST"
    course = access.get_managed_course(request.user, slug, access.EDIT_LABS, write=writing)
    form = LabForm(request.POST or None, course=course)
    if writing and form.is_valid():
        lab = form.save(commit=False)
        lab.course, lab.slug = course, form.cleaned_data["slug"] or free_lab_slug(course, lab.title)
        lab.save()
        messages.success(request, f"Made “{lab.title}”. Add its first section below, then its steps.")
        return redirect(editor_url(lab))
    return _new_page(request, course, form=form, status=400 if writing else 200)


def _new_page(request, course, *, form=None, import_form=None, import_errors=(), status=200):
    context = {
        "course": course,
        "form": form or LabForm(course=course),
        "load_form": LoadLabForm(),
        "import_form": import_form or ImportForm(),
        "import_errors": import_errors,
        "read_only": read_only(course),
    }
    return render(request, "labs/new.html", context, status=status)


@login_required
@require_POST
def lab_import(request, slug: str):
    course = access.get_managed_course(request.user, slug, access.EDIT_LABS, write=True)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _new_page(request, course, import_form=form, status=400)
    try:
        definition = lab_files.parse(form.cleaned_data["content"])
        lab = import_lab(course, definition)
    except LabFileInvalid as exc:
        return _new_page(request, course, import_form=form, import_errors=exc.problems, status=400)
    steps = sum(section.steps.count() for section in lab.sections.all())
    renamed = f" as “{lab.slug}” (another lab of the course has “{definition['slug']}”)"
    said = renamed if lab.slug != definition["slug"] else ""
    messages.success(request, f"Imported “{lab.title}”{said}: {lab.sections.count()} sections, {steps} steps.")
    return redirect(editor_url(lab))


def _section_rows(lab: Lab):
    students = access.students_of(lab.course)
    stakes = editing.stakes_by_step(lab, students)
    rows = []
    for section in lab.sections.prefetch_related("steps__template").order_by("position"):
        steps = [
            {"step": step, "check": check_in_words(step.check_spec or {}, step.template_id is not None),
             "stake": stakes.get(step.pk, 0)}
            for step in section.steps.all()
        ]  # fmt: skip
        form = SectionForm(instance=section, prefix=f"s{section.pk}")
        rows.append({"section": section, "steps": steps, "form": form})
    return rows


@login_required
def lab_edit(request, slug: str, lab_slug: str):
    """The lab's editor: its title, summary and stuck flag; its sections and their steps, in order."""
    writing = request.method == "POST"
    lab = access.get_editable_lab(request.user, slug, lab_slug, write=writing)
    form = LabForm(request.POST or None, instance=lab, course=lab.course)
    if writing and form.is_valid():
        form.save()
        messages.success(request, f"Saved “{lab.title}”. Students see the change on their next page load.")
        return redirect(editor_url(lab))
    context = {
        "lab": lab,
        "course": lab.course,
        "form": form,
        "summary_html": markdown(form["summary"].value() or ""),
        "sections": _section_rows(lab),
        "new_section": SectionForm(prefix="new", initial={"planned_minutes": 15}),
        "read_only": read_only(lab.course),
        "students": access.students_of(lab.course).count(),
    }
    return render(request, "labs/edit.html", context, status=400 if writing else 200)


@login_required
def lab_export(request, slug: str, lab_slug: str):
    """The lab as a lab file, the YAML the built-in labs are written in; Import reads it back."""
    lab = access.get_editable_lab(request.user, slug, lab_slug)
    text = lab_files.dump(lab_files.definition_of(lab))
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{lab.course.slug}-{lab.slug}.yaml"'
    return response


@login_required
@require_POST
def preview(request, slug: str, lab_slug: str):
    """htmx: the Markdown being written, rendered by the lab page's own sanitizer (labs/markdown.py)."""
    access.get_editable_lab(request.user, slug, lab_slug)
    text = request.POST.get("instructions", request.POST.get("summary", ""))
    return render(request, "labs/_preview.html", {"html": markdown(text[: lab_files.MAX_TEXT])})


def _form_problems(form) -> str:
    return " ".join(f"{form.fields[name].label if name in form.fields else ''}: {' '.join(errors)}".lstrip(": ")
                    for name, errors in form.errors.items())  # fmt: skip


@login_required
@require_POST
def section_add(request, slug: str, lab_slug: str):
    lab = access.get_editable_lab(request.user, slug, lab_slug, write=True)
    form = SectionForm(request.POST, prefix="new")
    if not form.is_valid():
        messages.error(request, f"The section was not added. {_form_problems(form)}")
        return redirect(editor_url(lab, "new-section"))
    section = editing.add_section(lab, form.cleaned_data["title"], form.cleaned_data["planned_minutes"])
    messages.success(request, f"Added the section “{section.title}”. Add its steps with “Add a step”.")
    return redirect(editor_url(lab, f"section-{section.pk}"))


@login_required
@require_POST
def section_edit(request, slug: str, lab_slug: str, section_id: int):
    section = access.get_editable_section(request.user, slug, lab_slug, section_id, write=True)
    form = SectionForm(request.POST, instance=section, prefix=f"s{section.pk}")
    if form.is_valid():
        form.save()
        messages.success(request, f"Saved the section “{section.title}”.")
    else:
        messages.error(request, f"The section was not saved. {_form_problems(form)}")
    return redirect(editor_url(section.lab, f"section-{section.pk}"))


@login_required
@require_POST
def section_move(request, slug: str, lab_slug: str, section_id: int):
    section = access.get_editable_section(request.user, slug, lab_slug, section_id, write=True)
    by = MOVES.get(request.POST.get("direction", ""))
    if by is None:
        return HttpResponseBadRequest("Move up or down.")
    editing.move(section, by)
    return redirect(editor_url(section.lab, f"section-{section.pk}"))


@login_required
def section_remove(request, slug: str, lab_slug: str, section_id: int):
    """A warning first (what the students have in its steps, what removing it does to that), then the removal."""
    writing = request.method == "POST"
    section = access.get_editable_section(request.user, slug, lab_slug, section_id, write=writing)
    lab = section.lab
    if writing:
        title = section.title
        editing.remove_section(section)
        messages.success(request, f"Removed the section “{title}” and its steps. {GONE}")
        return redirect(editor_url(lab))
    return confirm_removal(request, lab, section, list(section.steps.all()))


GONE = (
    "Students' answers and log findings for its steps are gone; their runs stay in their job lists, and the other "
    "steps keep their progress."
)


def confirm_removal(request, lab: Lab, what, steps) -> HttpResponse:
    students = access.students_of(lab.course)
    context = {
        "lab": lab,
        "course": lab.course,
        "what": what,
        "is_section": isinstance(what, Section),
        "steps": steps,
        "stake": editing.stake_in(lab, steps, students) if steps else editing.Stake(),
        "read_only": read_only(lab.course),
    }
    return render(request, "labs/remove.html", context)
