"""A course's lab session, on now or next, as every page that shows the course says it (courses/_lab_session.html)."""

from django import template
from django.utils import timezone
from django.utils.timesince import timeuntil

from clusters import kinds
from courses.lab_sessions import current_or_next

register = template.Library()


@register.inclusion_tag("courses/_lab_session.html")
def lab_session_notice(session, teaches: bool = False):
    """`session`: a LabSession with its cluster loaded (courses.lab_sessions.current_or_next), or None ("" from
    `|first` on an empty list)."""
    if not session:
        return {"session": None}
    now = timezone.now()
    holds = kinds.kind_of(session.cluster.kind).lab_holds if session.cluster.kind in kinds.KINDS else None
    note = (holds.teacher_note if teaches else holds.student_note) if holds else ""
    return {
        "session": session,
        "teaches": teaches,
        "note": note.format(cluster=session.cluster.display_name),
        "on_now": session.starts_at <= now < session.ends_at,
        "held": session.gpus_held or session.gpus,
        "ends_in": timeuntil(session.ends_at, now, depth=2),
        "starts_in": timeuntil(session.starts_at, now, depth=2),
    }


@register.inclusion_tag("courses/_lab_session.html")
def course_lab_session(course, teaches: bool = False):
    """The same notice on a page about one course: its session on now, else its next (one query)."""
    return lab_session_notice(current_or_next(course), teaches)
