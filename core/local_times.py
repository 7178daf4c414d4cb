"""Instants on any page as <time> elements that the browser shows in the viewer's own zone.

The server writes the instant in the portal's zone, named, so a page read without JavaScript is still exact;
static/js/local_times.js (on every page) rewrites it with Intl in the viewer's zone. A template library for every
app (`{% load local_times %}`, registered in settings.TEMPLATES); jobs' `job_time` offers the same tag.
"""

from __future__ import annotations

from datetime import UTC, datetime

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
