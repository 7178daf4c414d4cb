"""An instructor's note to a lab's class or to one student: kept on the lab (shown on the lab page) and told through
the notifications app, as any other message the portal sends."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q
from django.urls import reverse

from notifications import notify
from notifications.events import Event

from .access import students_of
from .models import Lab, Note


def post_note(lab: Lab, author, text: str, student=None) -> Note:
    note = Note.objects.create(lab=lab, author=author, student=student, text=text)
    url = settings.PORTAL_URL + reverse("labs:lab", args=[lab.course.slug, lab.slug])
    context = {"key": f"note-{note.pk}", "text": text, "url": url, "course": lab.course}
    context["subject"] = f"A note on {lab.title}"
    for person in [student] if student is not None else students_of(lab.course):
        notify(person, Event.LAB_NOTE, context=context)
    return note


def notes_for(lab: Lab, student) -> list[Note]:
    """What the student is shown: the class's notes and their own, newest first."""
    return list(lab.notes.filter(Q(student=None) | Q(student=student))[:10])
