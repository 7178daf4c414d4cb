"""Times on job pages: instants as <time> elements the browser shows in the viewer's own zone, durations in words.

The server writes the instant in the portal's zone, named, so a page read without JavaScript is still exact;
static/js/local_times.js (on every page) rewrites it with Intl in the viewer's zone.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.html import format_html

register = template.Library()


FALLBACK_FORMATS = {"datetime": "%Y-%m-%d %H:%M:%S %Z", "time": "%H:%M:%S", "short": "%Y-%m-%d %H:%M %Z"}


@register.simple_tag
def local_time(value: datetime | None, style: str = "datetime"):
    """`style`: "datetime" (date, time and zone name), "time" (a timeline's clock time) or "short" (a table's
    date and minute)."""
    if value is None:
        return "—"
    return format_html(
        '<time datetime="{}" data-local-time="{}">{}</time>',
        value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        style,
        timezone.localtime(value).strftime(FALLBACK_FORMATS[style]),
    )


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
