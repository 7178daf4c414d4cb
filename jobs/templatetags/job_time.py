"""Times on job pages: instants in the viewer's own zone (core/local_times.py's tag, offered here too) and durations
in words."""

from __future__ import annotations

from datetime import timedelta

from django import template

from core.local_times import local_time

register = template.Library()
register.simple_tag(local_time)


@register.filter
def duration(value: timedelta | None) -> str:
    """12 s, 12 min, 1 h 05 min, 2 d 3 h: as precise as a person reading a progress line needs."""
    if value is None:
        return ""
    seconds = max(0, int(value.total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"
