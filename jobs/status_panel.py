"""The job page's state panel, sent again only when what it shows changed.

The panel is three parts that change at different speeds: the card (state, facts, actions), the progress inside it
(time run and left, step and ETA, and the cancel question built from them: a change a minute, or a step) and the
timeline (a change per event). Each part's version is a digest of its rendered HTML, so whatever a part shows is in
its version. The page's poller (jobs/_status_poller.html) sends the versions it holds; the answer carries only the
parts that changed, which htmx swaps in by id, or is a 204 when none did: an open page does no DOM work while
nothing happens (bench/browser_pages.py measures it per live frame).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.template.loader import render_to_string

PARTS = ("card", "progress", "timeline")


@dataclass(frozen=True)
class Panel:
    card: str  # holds the progress
    progress: str
    timeline: str
    seen: str  # the parts' versions, as the poller sends them back: "card.progress.timeline"

    def changed_since(self, seen: str) -> list[str]:
        """The parts whose version differs from `seen`; the card carries its progress, so not both."""
        held = dict(zip(PARTS, seen.split("."), strict=False))
        changed = [part for part, version in zip(PARTS, self.seen.split("."), strict=True) if held.get(part) != version]
        return [part for part in changed if not (part == "progress" and "card" in changed)]


def render_panel(context: dict) -> Panel:
    """`context`: what jobs/_status.html and jobs/_timeline.html read (jobs.views.jobs._status_context)."""
    progress = render_to_string("jobs/_progress.html", context)
    card = render_to_string("jobs/_status.html", {**context, "progress_html": progress})
    timeline = render_to_string("jobs/_timeline.html", context)
    versions = (_digest(card.replace(progress, "", 1)), _digest(progress), _digest(timeline))
    return Panel(card, progress, timeline, ".".join(versions))


def _digest(html: str) -> str:
    return hashlib.blake2b(html.encode(), digest_size=6).hexdigest()
