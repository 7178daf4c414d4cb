"""Instructor template authoring: preview with the defaults, and publishing only what renders and parses.

The checks are the kind's (clusters/backends/<kind>/): a batch script is published only if every placeholder passes the
bash context checker (the SLURM family's script safety), each refusal its own preview error naming the line, the context
and the fix; Kubernetes objects only if they are checked and validated.

A published template stays what students launch while its instructor edits it: saving puts the changes in its
TemplateDraft, and only publishing (which checks them) copies them onto the template. Its slug and courses are
where it is offered, not what it runs, and change at once.
"""

from __future__ import annotations

import copy

from django.db import transaction
from django.utils import timezone

from clusters import kinds
from clusters.backends.kind import Preview
from courses.copying import free_slug

from .models import JobTemplate, TemplateDraft

__all__ = [
    "Preview",
    "copy_to_course",
    "discard_draft",
    "draft_of",
    "preview",
    "preview_template",
    "publish",
    "publish_edit",
    "save_edit",
    "unpublish",
    "with_draft",
]


def preview(body: str, parameters, cluster=None, backend: str | None = None) -> Preview:
    """What the defaults render to, checked the way the kind that runs `backend` templates checks them
    (default: the templates a new JobTemplate is written for)."""
    backend = backend or kinds.default_templates()
    return kinds.kind_of(backend).preview(body, parameters, cluster)


def checking_cluster(courses, backend: str):
    """A cluster of these courses that runs `backend` templates, whose lab directory and preamble a preview uses;
    None renders with the defaults."""
    running = kinds.kinds_running(backend or kinds.default_templates())
    return next((c for course in courses for c in course.clusters.all() if c.kind in running), None)


def preview_template(template: JobTemplate) -> Preview:
    cluster = checking_cluster(template.courses.all(), template.backend)
    return preview(template.body, template.parameters, cluster, template.backend)


def publish(template: JobTemplate) -> Preview:
    """Publish the saved template as it stands if it renders with its defaults and passes bash -n; the preview says
    why not."""
    result = preview_template(template)
    if result.ok:
        now = timezone.now()
        JobTemplate.objects.filter(pk=template.pk).update(status=JobTemplate.Status.PUBLISHED, published_at=now)
        template.status, template.published_at = JobTemplate.Status.PUBLISHED, now
    return result


def draft_of(template: JobTemplate) -> TemplateDraft | None:
    """The unpublished changes to a published template, or None."""
    if template.pk is None:
        return None
    return TemplateDraft.objects.filter(template=template).select_related("saved_by").first()


def with_draft(template: JobTemplate, draft: TemplateDraft | None) -> JobTemplate:
    """The template as its editor shows it: a copy holding the draft's content where there is a draft."""
    if draft is None:
        return template
    editing = copy.copy(template)
    for field, value in draft.content().items():
        setattr(editing, field, value)
    return editing


def save_edit(edited: JobTemplate, *, user) -> bool:
    """Save the editor's content. A template students see keeps its published content: the changes go to its draft
    (none when they equal the published content). True when they did."""
    with transaction.atomic():
        live = JobTemplate.objects.select_for_update().filter(pk=edited.pk).first() if edited.pk else None
        if live is None or live.status != JobTemplate.Status.PUBLISHED:
            edited.save()
            TemplateDraft.objects.filter(template_id=edited.pk).delete()
            return False
        JobTemplate.objects.filter(pk=live.pk).update(slug=edited.slug)
        if edited.content() == live.content():
            TemplateDraft.objects.filter(template=live).delete()
        else:
            TemplateDraft.objects.update_or_create(template=live, defaults={**edited.content(), "saved_by": user})
        return True


def publish_edit(edited: JobTemplate, *, courses) -> Preview:
    """Check the editor's content the way publishing does and, if it passes, save it as the version students see
    (the draft, if any, is then spent). `courses`: those the form puts it in, for the preview's cluster. Nothing is
    saved when it does not pass."""
    result = preview(edited.body, edited.parameters, checking_cluster(courses, edited.backend), edited.backend)
    if result.ok:
        with transaction.atomic():
            edited.status, edited.published_at = JobTemplate.Status.PUBLISHED, timezone.now()
            edited.save()
            TemplateDraft.objects.filter(template=edited).delete()
    return result


def unpublish(template: JobTemplate) -> None:
    """Students no longer see it; unpublished changes, if any, become its content (nobody launches it now)."""
    with transaction.atomic():
        draft = draft_of(template)
        changes = draft.content() if draft else {}
        JobTemplate.objects.filter(pk=template.pk).update(status=JobTemplate.Status.DRAFT, **changes)
        TemplateDraft.objects.filter(template=template).delete()


def discard_draft(template: JobTemplate) -> bool:
    """Drop the unpublished changes; the editor shows the published version again. False when there were none."""
    deleted, _ = TemplateDraft.objects.filter(template=template).delete()
    return bool(deleted)


def copy_to_course(source: JobTemplate, course, *, user) -> JobTemplate:
    """A draft copy of `source` (a built-in or shared template) in `course`, owned by `user`, who may then change
    anything in it; it records where it came from. `source` stays as it is, in the courses it is in."""
    copy = JobTemplate(
        **source.content(),
        slug=free_slug(JobTemplate, f"{source.slug}-{course.slug}"),
        session=source.session,
        copied_from=source,
        created_by=user,
    )
    with transaction.atomic():
        copy.save()
        copy.courses.add(course)
    return copy
