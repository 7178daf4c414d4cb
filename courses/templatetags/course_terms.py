"""The course term's line and notices, the same on every page that shows a course (courses/_term.html)."""

from django import template
from django.utils import timezone
from django.utils.timesince import timeuntil

from courses import terms

register = template.Library()


@register.inclusion_tag("courses/_term.html")
def term_notice(course, teaches: bool = False):
    """`teaches`: the reader teaches the course (or is an admin) and gets the instructors' wording."""
    now = timezone.now()
    context = {"course": course, "teaches": teaches, "has_term": terms.has_term(course)}
    if not context["has_term"]:
        return context
    context |= {
        "starts": terms.when(course.term_starts_at),
        "ends": terms.when(course.term_ends_at),
        "ended": terms.has_ended(course, now),
        "started": terms.has_started(course, now),
        "ends_in": timeuntil(course.term_ends_at, now, depth=1),
    }
    if context["ended"]:
        context["message"] = terms.read_only_message(course)
    elif not context["started"] and not teaches:
        context["message"] = terms.launch_refusal(course, teaches=False, now=now)
    notice_span = terms.INSTRUCTOR_NOTICE if teaches else terms.STUDENT_WARNING
    context["ending_soon"] = terms.ends_within(course, notice_span, now)
    return context


@register.filter
def term_date(moment) -> str:
    return terms.when(moment) if moment else ""


@register.inclusion_tag("courses/_term_warning.html")
def term_warning(course):
    """On an unfinished job's page: the warning that the course's term ends soon and the job will be stopped."""
    if not terms.ends_within(course, terms.STUDENT_WARNING):
        return {"ends": None}
    ends_in = timeuntil(course.term_ends_at, depth=1)
    return {"course": course, "ends": terms.when(course.term_ends_at), "ends_in": ends_in}
