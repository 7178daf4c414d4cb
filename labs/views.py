"""The student's side of a lab: the course's labs, a lab page (sections with planned times, each step's state, its
launch button, its runs, the notes), a step's launch (the jobs launch form, prefilled) and a short answer."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from courses.access import get_course, launchable_clusters, may_manage
from jobs.access import launchable_templates

from . import access, live
from .forms import AnswerForm, LoadLabForm
from .markdown import render as markdown
from .models import Answer, Lab, Step
from .notes import notes_for
from .progress import State, student_progress
from .specs import CheckKind


@login_required
def lab_list(request, slug: str):
    course = get_course(request.user, slug)
    context = {
        "course": course,
        "labs": course.labs.all(),
        "manages": may_manage(request.user, course),
        "teaches": access.may_teach(request.user, course),
        "form": LoadLabForm(),
    }
    return render(request, "labs/lab_list.html", context)


@login_required
def lab_page(request, slug: str, lab_slug: str):
    lab = access.get_lab(request.user, slug, lab_slug)
    progress = student_progress(lab, request.user)
    launchable = set(launchable_templates(request.user, lab.course).values_list("pk", flat=True))
    sections: dict[int, dict] = {}
    for cell in progress:
        section = sections.setdefault(cell.step.section_id, {"section": cell.step.section, "cells": []})
        cell.html = markdown(cell.step.instructions)  # type: ignore[attr-defined]
        cell.launch = _launch_state(request.user, lab, cell.step, launchable)  # type: ignore[attr-defined]
        cell.answer_form = AnswerForm(initial={"text": cell.answer.text if cell.answer else ""})  # type: ignore[attr-defined]
        cell.compare_url = _compare_url(cell.jobs)  # type: ignore[attr-defined]
        section["cells"].append(cell)
    counted = [c for c in progress if c.state != State.NONE]
    context = {
        "lab": lab,
        "course": lab.course,
        "summary": markdown(lab.summary),
        "sections": list(sections.values()),
        "done": sum(1 for c in counted if c.state == State.DONE),
        "total": len(counted),
        "current": next((c for c in counted if c.state != State.DONE), None),
        "notes": notes_for(lab, request.user),
        "teaches": access.may_teach(request.user, lab.course),
        "manages": may_manage(request.user, lab.course),
        "running": any(c.state == State.RUNNING for c in progress),
    }
    return render(request, "labs/lab_page.html", context)


COMPARE_NEWEST = 6  # a step's runs side by side: the newest few, which a phone still tells apart


def _compare_url(jobs) -> str:
    """The comparison page of the step's newest runs that started (a run that never ran has nothing to compare),
    once there are two; oldest first, so the comparison's baseline is where the student began."""
    started = [job for job in jobs if job.started_at][:COMPARE_NEWEST]
    if len(started) < 2:
        return ""
    ids = ",".join(str(job.pk) for job in reversed(started))
    return f"{reverse('experiments:compare')}?{urlencode({'jobs': ids})}"


def _launch_state(user, lab: Lab, step: Step, launchable: set[int]) -> dict | None:
    """What the step's launch button can do: None when the step launches nothing; else its URL, or why not."""
    if step.template is None:
        return None
    if step.template_id not in launchable:
        return {"refusal": f"“{step.template.name}” is not published in this course. Ask your instructor."}
    if not launchable_clusters(user, lab.course, step.template).exists():
        kind = step.template.get_backend_display()
        return {"refusal": f"No cluster of this course runs {kind} jobs, so this step cannot be launched here yet."}
    fixed = ", ".join(f"{name}={_text(step.preset[name])}" for name in step.fixed)
    return {"url": reverse("labs:launch_step", args=[lab.course.slug, lab.slug, step.pk]), "fixed": fixed}


def _step(lab: Lab, step_id: int) -> Step:
    return get_object_or_404(Step.objects.select_related("template", "section"), pk=step_id, section__lab=lab)


@login_required
def launch_step(request, slug: str, lab_slug: str, step_id: int):
    """The launch form of the step's template, opened with the step's values and its fixed ones locked."""
    lab = access.get_lab(request.user, slug, lab_slug)
    step = _step(lab, step_id)
    if step.template is None:
        raise Http404("This step launches nothing.")
    query = [(f"set.{name}", _text(value)) for name, value in step.preset.items()]
    query += [("fix", name) for name in step.fixed]
    url = reverse("jobs:launch", args=[lab.course.slug, step.template.slug])
    return redirect(f"{url}?{urlencode(query)}" if query else url)


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@login_required
@require_POST
def answer(request, slug: str, lab_slug: str, step_id: int):
    lab = access.get_lab(request.user, slug, lab_slug)
    step = _step(lab, step_id)
    check = step.check_spec or {}
    form = AnswerForm(request.POST)
    if check.get("kind") != CheckKind.ANSWER or not form.is_valid():
        messages.error(request, "Write an answer first (at most 2,000 characters).")
        return redirect("labs:lab", slug, lab_slug)
    text = form.cleaned_data["text"].strip()
    accepted = (text == check["correct"]) if "choices" in check else None
    Answer.objects.update_or_create(
        step=step, student=request.user, defaults={"text": text, "accepted": accepted, "marked_by": None}
    )
    messages.success(
        request, "Answer saved." if accepted is not False else "Not quite: think again and answer once more."
    )
    live.send_rows_after_commit([lab], request.user)
    return redirect(f"{reverse('labs:lab', args=[slug, lab_slug])}#step-{step.pk}")
