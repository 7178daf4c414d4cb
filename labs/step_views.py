"""The lab editor, a step's side: its form (text with a preview, the launch, the check, the quick fixes), its place
(moved up or down, or to another section) and its removal after a warning. Same access as the rest of the editor
(labs/access.py: the course's instructors; a TA 403; anyone else 404)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from jobs.models import JobTemplate

from . import access, editing
from .edit_forms import QuickFixFormSet, StepForm, quick_fix_rows
from .edit_views import GONE, MOVES, confirm_removal, editor_url, read_only
from .loading import cluster_choices
from .markdown import render as markdown
from .models import Lab, Section, Step

FIXES = "fix"  # the quick fixes' formset prefix


def _templates(lab: Lab, step: Step | None):
    """The course's templates, and the step's own where it is no longer among them (so saving keeps it)."""
    offered = JobTemplate.objects.filter(courses=lab.course)
    if step is not None and step.template_id is not None:
        offered = offered | JobTemplate.objects.filter(pk=step.template_id)
    return offered.distinct().order_by("name")


def _initial(step: Step | None, section: Section) -> dict:
    if step is None:
        return {"section": section}
    check = step.check_spec or {}
    return {
        "title": step.title,
        "section": step.section,
        "instructions": step.instructions,
        "template": step.template,
        "preset": step.preset or {},
        "fixed": step.fixed or [],
        "check_kind": check.get("kind", ""),
        "pattern": check.get("pattern", ""),
        "figure": check.get("figure", ""),
        "bound": check.get("bound", ""),
        "value": check.get("value"),
        "parameter": check.get("parameter", ""),
        "choices": "\n".join(check.get("choices", [])),
        "correct": check.get("correct", ""),
    }


def _fixes(request, step: Step | None, action: str):
    if request.method != "POST":
        return QuickFixFormSet(initial=quick_fix_rows(step.quick_fixes if step else []), prefix=FIXES)
    data = request.POST
    if action == "more":  # one more empty row, the others as posted
        data = data.copy()
        total = f"{FIXES}-TOTAL_FORMS"
        data[total] = str(int(data.get(total) or 0) + 1)
    return QuickFixFormSet(data, prefix=FIXES)


def _step_page(request, lab: Lab, section: Section, step: Step | None):
    writing = request.method == "POST"
    action = request.POST.get("action", "save") if writing else ""
    form = StepForm(
        request.POST if writing else None,
        lab=lab,
        templates=_templates(lab, step),
        cluster_choices=cluster_choices(lab.course),
        initial=_initial(step, section),
    )
    fixes = _fixes(request, step, action)
    if action == "save" and form.is_valid() and fixes.is_valid():
        saved = _save(form, fixes, section, step)
        messages.success(request, f"Saved the step “{saved.title}”. Students see it on the lab page now.")
        return redirect(editor_url(lab, f"step-{saved.pk}"))
    text = request.POST.get("instructions", "") if writing else (step.instructions if step else "")
    stake = editing.stakes_by_step(lab, access.students_of(lab.course)).get(step.pk, 0) if step else 0
    context = {
        "lab": lab,
        "course": lab.course,
        "section": section,
        "step": step,
        "form": form,
        "fixes": fixes,
        "show_errors": action == "save",
        "preview_html": markdown(text),
        "stake": stake,
        "read_only": read_only(lab.course),
    }
    return render(request, "labs/step_form.html", context, status=400 if action == "save" else 200)


def _save(form: StepForm, fixes, section: Section, step: Step | None) -> Step:
    deleted = set(fixes.deleted_forms)
    quick_fixes = [f.cleaned_data["fix"] for f in fixes.forms if f not in deleted and f.cleaned_data.get("fix")]
    fields = {**form.cleaned_data["step"], "quick_fixes": quick_fixes}
    chosen = form.cleaned_data["section"] or section
    if step is None:
        return editing.add_step(chosen, fields)
    editing.save_step(step, fields)
    editing.move_step_to(step, chosen)
    return step


@login_required
def step_new(request, slug: str, lab_slug: str, section_id: int):
    section = access.get_editable_section(request.user, slug, lab_slug, section_id, write=request.method == "POST")
    return _step_page(request, section.lab, section, None)


@login_required
def step_edit(request, slug: str, lab_slug: str, step_id: int):
    step = access.get_editable_step(request.user, slug, lab_slug, step_id, write=request.method == "POST")
    return _step_page(request, step.section.lab, step.section, step)


@login_required
@require_POST
def step_move(request, slug: str, lab_slug: str, step_id: int):
    step = access.get_editable_step(request.user, slug, lab_slug, step_id, write=True)
    by = MOVES.get(request.POST.get("direction", ""))
    if by is None:
        return HttpResponseBadRequest("Move up or down.")
    editing.move(step, by)
    return redirect(editor_url(step.section.lab, f"step-{step.pk}"))


@login_required
def step_remove(request, slug: str, lab_slug: str, step_id: int):
    """A warning first (who has progress on the step, what removing it does to that), then the removal."""
    writing = request.method == "POST"
    step = access.get_editable_step(request.user, slug, lab_slug, step_id, write=writing)
    lab = step.section.lab
    if writing:
        title = step.title
        editing.remove_step(step)
        messages.success(request, f"Removed the step “{title}”. {GONE.replace('its steps', 'it')}")
        return redirect(editor_url(lab, f"section-{step.section_id}"))
    return confirm_removal(request, lab, step, [step])
