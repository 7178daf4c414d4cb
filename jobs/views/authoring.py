from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from clusters import kinds
from courses import terms
from courses.models import Course
from jobs import access, authoring
from jobs.authoring import preview
from jobs.forms import TemplateForm
from jobs.models import JobTemplate

TEMPLATES = "author and publish its templates"  # a TA is told "Only the course's instructors author and publish …"


def ended_course_ids():
    """Courses a template may no longer be added to: their term has ended."""
    return Course.objects.filter(term_ends_at__lte=timezone.now()).values("pk")


@login_required
def template_list(request, course_slug: str):
    course = access.get_managed_course(request.user, course_slug, TEMPLATES)
    templates = course.templates.select_related("draft").prefetch_related("courses").order_by("status", "name")
    rows = [(t, access.may_author(request.user, t), access.template_read_only(t)) for t in templates]
    context = {"course": course, "rows": rows, "read_only": terms.has_ended(course)}
    return render(request, "jobs/authoring/list.html", context)


@login_required
def template_edit(request, course_slug: str, slug: str | None = None):
    """The editor. "Save draft" keeps a published template's published version live (authoring.save_edit);
    "Publish" checks what is in the form and, if it passes, saves and publishes it in one step."""
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
    form = TemplateForm(
        request.POST or None,
        instance=authoring.with_draft(template, draft),
        teaching=teaching if read_only else teaching.exclude(pk__in=ended_course_ids()),
        initial={"courses": [course]} if not slug else None,
    )
    if read_only:
        for field in form.fields.values():
            field.disabled = True
    if writing and form.is_valid():
        done = _publish(request, form) if request.POST.get("action") == "publish" else _save(request, form)
        if done is not None:
            return redirect("jobs:template_edit", course_slug=course.slug, slug=done.slug)
    editing = form.instance
    checked = preview(editing.body, editing.parameters, backend=editing.backend) if editing.pk else None
    context = {
        "course": course,
        "template": template,
        "draft": draft,
        "form": form,
        "preview": checked,
        "read_only": read_only,
    }
    return render(request, "jobs/authoring/edit.html", context, status=400 if form.errors else 200)


def _save(request, form: TemplateForm) -> JobTemplate:
    with transaction.atomic():
        edited = form.save(commit=False)
        kept_live = authoring.save_edit(edited, user=request.user)
        form.save_m2m()
    if kept_live:
        messages.success(
            request, f"Saved your changes to “{edited.name}”. Students see the published version until you publish."
        )
    else:
        messages.success(request, f"Saved “{edited.name}”.")
    return edited


def _publish(request, form: TemplateForm) -> JobTemplate | None:
    """Publish the form's content, or put the checks' errors on the form and publish nothing."""
    with transaction.atomic():
        edited = form.save(commit=False)
        result = authoring.publish_edit(edited, courses=form.cleaned_data["courses"])
        if result.ok:
            form.save_m2m()
    if not result.ok:
        for error in result.errors:
            form.add_error("body", error)
        return None
    messages.success(request, f"Published “{edited.name}”: students launch this version now.")
    return edited


@login_required
@require_POST
def template_preview(request, course_slug: str):
    """htmx: render what is in the editor now, without saving."""
    course = access.get_managed_course(request.user, course_slug, TEMPLATES)
    form = TemplateForm(request.POST, teaching=access.managed_courses(request.user))
    form.is_valid()
    if "parameters" in form.errors:
        result = None
        errors = form.errors["parameters"]
    else:
        backend = form.cleaned_data.get("backend") or kinds.default_templates()
        cluster = authoring.checking_cluster([course], backend)
        result = preview(request.POST.get("body", ""), form.cleaned_data.get("parameters", []), cluster, backend)
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
