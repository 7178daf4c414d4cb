"""What a job table's row shows beyond the job's fields: how long the job ran, or has run so far."""

from django import template
from django.utils import timezone

register = template.Library()


@register.filter
def duration(job) -> str:
    """ "1 h 05 min", "12 min 40 s", "35 s"; "—" for a job that never started."""
    if job.started_at is None:
        return "—"
    end = job.finished_at or (None if job.is_terminal else timezone.now())
    if end is None:
        return "—"
    seconds = max(0, int((end - job.started_at).total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"
