from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from clusters import kinds
from courses import terms
from courses.models import Course
from jobs import access, authoring, template_order
from jobs.authoring import preview
from jobs.models import JobTemplate
from jobs.template_forms import TemplateEditor

TEMPLATES = "author and publish its templates"  # a TA is told "Only the course's instructors author and publish …"


def ended_course_ids():
    """Courses a template may no longer be added to: their term has ended."""
    return Course.objects.filter(term_ends_at__lte=timezone.now()).values("pk")


@login_required
def template_list(request, course_slug: str):
    """The course's templates in the order its catalog lists them, which the instructor changes here."""
    course = access.get_managed_course(request.user, course_slug, TEMPLATES)
    placements = course.template_placements.select_related("template__draft", "template__copied_from")
    templates = [p.template for p in placements.prefetch_related("template__courses")]
    managed = set(access.managed_courses(request.user).values_list("pk", flat=True))
    rows = [(t, access.may_author(request.user, t, managed=managed), access.template_read_only(t)) for t in templates]
    builtins = JobTemplate.objects.filter(builtin=True, status=JobTemplate.Status.PUBLISHED).exclude(courses=course)
    context = {
        "course": course,
        "rows": rows,
        "builtins": builtins.order_by("name"),
        "read_only": terms.has_ended(course),
    }
    return render(request, "jobs/authoring/list.html", context)


@login_required
@require_POST
def template_move(request, course_slug: str, slug: str):
    """Move one of the course's templates up or down its catalog (any of them: built-in and shared ones too)."""
    course = access.get_managed_course(request.user, course_slug, TEMPLATES, write=True)
    step = {"up": -1, "down": 1}.get(request.POST.get("direction", ""))
    if step is None:
        return HttpResponseBadRequest("Move up or down.")
    template = get_object_or_404(course.templates, slug=slug)
    template_order.move(course, template, step)
    return redirect(reverse("jobs:template_list", args=[course.slug]) + f"#template-{template.slug}")


@login_required
def template_edit(request, course_slug: str, slug: str | None = None):
    """The editor. "Save draft" keeps a published template's published version live (authoring.save_edit);
    "Publish" checks what is in the form and, if it passes, saves and publishes it in one step; "Add a parameter"
    and the rows' move buttons show the form again as posted, with the rows changed, and save nothing."""
    writing = request.method == "POST"
    course = access.get_managed_course(request.user, course_slug, TEMPLATES, write=writing and not slug)
    if slug:
        template = access.get_authorable_template(request.user, slug, write=writing)
    else:
        template = JobTemplate(created_by=request.user)
    read_only = access.template_read_only(template) or (
        terms.read_only_message(course) if not slug and terms.has_ended(course) else None
    )
    draft = authoring.draft_of(template)
    teaching = access.managed_courses(request.user)
    instance = authoring.with_draft(template, draft)
    if not read_only:
        teaching = teaching.exclude(pk__in=ended_course_ids())
    action = request.POST.get("action", "save")
    if writing and action not in ("save", "publish"):
        editor = TemplateEditor.rearranged(request.POST, action, instance=instance, teaching=teaching)
    else:
        initial = {"courses": [course]} if not slug else None
        editor = TemplateEditor(request.POST or None, instance=instance, teaching=teaching, initial=initial)
    if read_only:
        editor.disable()
    if writing and action in ("save", "publish") and editor.is_valid():
        done = _publish(request, editor) if action == "publish" else _save(request, editor)
        if done is not None:
            return redirect("jobs:template_edit", course_slug=course.slug, slug=done.slug)
    editing = editor.instance
    checked = preview(editing.body, editing.parameters, backend=editing.backend) if editing.pk else None
    context = {
        "course": course,
        "template": template,
        "draft": draft,
        "form": editor.form,
        "parameters": editor.parameters,
        "preview": checked,
        "read_only": read_only,
        "action": action,
        "has_errors": editor.has_errors,
    }
    return render(request, "jobs/authoring/edit.html", context, status=400 if editor.has_errors else 200)


def _save(request, editor: TemplateEditor) -> JobTemplate:
    with transaction.atomic():
        edited = editor.edited()
        kept_live = authoring.save_edit(edited, user=request.user)
        editor.save_m2m()
    if kept_live:
        messages.success(
            request, f"Saved your changes to “{edited.name}”. Students see the published version until you publish."
        )
    else:
        messages.success(request, f"Saved “{edited.name}”.")
    return edited


def _publish(request, editor: TemplateEditor) -> JobTemplate | None:
    """Publish the form's content, or put the checks' errors on the form and publish nothing."""
    with transaction.atomic():
        edited = editor.edited()
        result = authoring.publish_edit(edited, courses=editor.form.cleaned_data["courses"])
        if result.ok:
            editor.save_m2m()
    if not result.ok:
        for error in result.errors:
            editor.form.add_error("body", error)
        return None
    messages.success(request, f"Published “{edited.name}”: students launch this version now.")
    return edited


@login_required
@require_POST
def template_preview(request, course_slug: str):
    """htmx: render what is in the editor now, without saving."""
    course = access.get_managed_course(request.user, course_slug, TEMPLATES)
    editor = TemplateEditor(request.POST, instance=JobTemplate(), teaching=access.managed_courses(request.user))
    editor.is_valid()
    if not editor.parameters.is_valid():
        result, errors = None, editor.parameters.messages()
    else:
        backend = editor.form.cleaned_data.get("backend") or kinds.default_templates()
        cluster = authoring.checking_cluster([course], backend)
        body = request.POST.get("body", "").replace("\r\n", "\n")
        result = preview(body, editor.parameters.parameters(), cluster, backend)
        errors = result.errors
    return render(request, "jobs/authoring/_preview.html", {"preview": result, "errors": errors})


@login_required
@require_POST
def template_status(request, course_slug: str, slug: str):
    """Unpublish the template, or discard its unpublished changes."""
    course = access.get_managed_course(request.user, course_slug, TEMPLATES, write=True)
    template = access.get_authorable_template(request.user, slug, write=True)
    if course not in template.courses.all():
        raise Http404("No such template.")
    action = request.POST.get("action")
    if action == "unpublish":
        authoring.unpublish(template)
        messages.info(request, f"“{template.name}” is a draft again; students no longer see it.")
    elif action == "discard":
        if authoring.discard_draft(template):
            messages.info(request, "Discarded the unpublished changes; the form shows the published version again.")
    else:
        return HttpResponseBadRequest("Unknown action.")
    return redirect("jobs:template_edit", course_slug=course.slug, slug=template.slug)


@login_required
@require_POST
def template_copy(request, course_slug: str, slug: str):
    """Copy a built-in (or shared) template into the course as a draft the instructor owns and may change."""
    course = access.get_managed_course(request.user, course_slug, TEMPLATES, write=True)
    copy = authoring.copy_to_course(access.get_copyable_template(request.user, slug), course, user=request.user)
    messages.success(
        request,
        f"Copied “{copy.name}” into {course.name} as a draft: change what you need, then publish it. "
        "Students see the copy once it is published.",
    )
    return redirect("jobs:template_edit", course_slug=course.slug, slug=copy.slug)
