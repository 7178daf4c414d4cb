from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.forms.utils import ErrorList
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from clusters import kinds
from courses import terms
from courses.models import Course
from jobs import access
from jobs.authoring import preview, publish
from jobs.forms import TemplateForm
from jobs.models import JobTemplate

TEMPLATES = "author and publish its templates"  # a TA is told "Only the course's instructors author and publish …"


def ended_course_ids():
    """Courses a template may no longer be added to: their term has ended."""
    return Course.objects.filter(term_ends_at__lte=timezone.now()).values("pk")


@login_required
def template_list(request, course_slug: str):
    course = access.get_managed_course(request.user, course_slug, TEMPLATES)
    templates = course.templates.prefetch_related("courses").order_by("status", "name")
    rows = [(t, access.may_author(request.user, t), access.template_read_only(t)) for t in templates]
    context = {"course": course, "rows": rows, "read_only": terms.has_ended(course)}
    return render(request, "jobs/authoring/list.html", context)


@login_required
def template_edit(request, course_slug: str, slug: str | None = None):
    writing = request.method == "POST"
    course = access.get_managed_course(request.user, course_slug, TEMPLATES, write=writing and not slug)
    if slug:
        template = access.get_authorable_template(request.user, slug, write=writing)
    else:
        template = JobTemplate(created_by=request.user)
    read_only = access.template_read_only(template) or (
        terms.read_only_message(course) if not slug and terms.has_ended(course) else None
    )
    teaching = access.managed_courses(request.user)
    form = TemplateForm(
        request.POST or None,
        instance=template,
        teaching=teaching if read_only else teaching.exclude(pk__in=ended_course_ids()),
        initial={"courses": [course]} if not slug else None,
    )
    if read_only:
        for field in form.fields.values():
            field.disabled = True
    if request.method == "POST" and form.is_valid():
        saved = form.save(commit=False)
        if saved.status == JobTemplate.Status.PUBLISHED:
            saved.status = JobTemplate.Status.DRAFT  # an edit is re-checked before students see it
            messages.info(request, "The template went back to draft; publish it again after checking the preview.")
        saved.save()
        form.save_m2m()
        messages.success(request, f"Saved “{saved.name}”.")
        return redirect("jobs:template_edit", course_slug=course.slug, slug=saved.slug)
    checked = preview(template.body, template.parameters, backend=template.backend) if template.pk else None
    context = {"course": course, "template": template, "form": form, "preview": checked, "read_only": read_only}
    return render(request, "jobs/authoring/edit.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def template_preview(request, course_slug: str):
    """htmx: render what is in the editor now, without saving."""
    course = access.get_managed_course(request.user, course_slug, TEMPLATES)
    form = TemplateForm(request.POST, teaching=access.managed_courses(request.user))
    form.is_valid()
    errors: list[str] | ErrorList
    if "parameters" in form.errors:
        result = None
        errors = form.errors["parameters"]
    else:
        backend = form.cleaned_data.get("backend") or kinds.default_templates()
        cluster = course.clusters.filter(kind__in=kinds.kinds_running(backend)).first()
        result = preview(request.POST.get("body", ""), form.cleaned_data.get("parameters", []), cluster, backend)
        errors = result.errors
    return render(request, "jobs/authoring/_preview.html", {"preview": result, "errors": errors})


@login_required
@require_POST
def template_publish(request, course_slug: str, slug: str):
    course = access.get_managed_course(request.user, course_slug, TEMPLATES, write=True)
    template = access.get_authorable_template(request.user, slug, write=True)
    if course not in template.courses.all():
        raise Http404("No such template.")
    if request.POST.get("action") == "unpublish":
        JobTemplate.objects.filter(pk=template.pk).update(status=JobTemplate.Status.DRAFT)
        messages.info(request, f"“{template.name}” is a draft again; students no longer see it.")
    else:
        result = publish(template)
        if result.ok:
            messages.success(request, f"Published “{template.name}”.")
        else:
            messages.error(request, "Not published: " + " ".join(result.errors))
    return redirect("jobs:template_edit", course_slug=course.slug, slug=template.slug)
