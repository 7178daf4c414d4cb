"""A step's Markdown as safe HTML: markdown-it-py (CommonMark) with raw HTML off, then nh3 (the Rust sanitizer
ammonia) as a second wall: only the tags Markdown makes, no attributes that run code, links only to http(s) and
mailto. Code blocks get their copy button in the browser (static/js/labs.js), so nothing here writes a button."""

from __future__ import annotations

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")

TAGS = {
    "a",
    "blockquote",
    "br",
    "code",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "hr",
    "li",
    "ol",
    "p",
    "pre",
    "strong",
    "ul",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}  # fmt: skip  (no img: a picture from elsewhere would tell another site who opened the lab)
ATTRIBUTES = {"a": {"href", "title"}, "code": {"class"}}  # class: the fence's language-…, which styles nothing
URL_SCHEMES = {"http", "https", "mailto"}


def render(text: str) -> SafeString:
    html = _MARKDOWN.render(text or "")
    cleaned = nh3.clean(
        html,
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )
    # Safe to mark: raw HTML was off in the parser, and nh3 kept only the tags, attributes and schemes listed above.
    return mark_safe(cleaned)  # noqa: S308
