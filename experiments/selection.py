"""Which runs a comparison shows: the ids a permalink (or a form) names, each checked for the viewer.

The URL holds the runs (`?jobs=<id>,<id>`), so a link can be shared; every run is looked up through the portal's
one job policy (jobs.access.visible_jobs) for whoever opens it. A run the viewer may not see and a run since deleted
are the same to them: left out and counted in a note, never named.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jobs import access
from jobs.models import Job

MIN_RUNS = 2
MAX_RUNS = 60  # an instructor puts a class's runs of one exercise on one chart (figures.py shares the points out)
MAX_TEXT = 4000  # characters of ids read from a query: 60 ids with commas are 2,220


class CompareRefused(ValueError):
    """The ids cannot make a comparison; the message says what to do, for the person who picked them."""


class NothingVisible(Exception):
    """None of the named runs may be shown to this viewer (or none exists any more)."""


@dataclass(frozen=True)
class Selection:
    jobs: list[Job]  # in the order the URL names them
    hidden: int  # named runs left out: not the viewer's to see, or deleted

    @property
    def note(self) -> str:
        if not self.hidden:
            return ""
        if self.hidden == 1:
            return "1 run is not shown: you may not see it or it was deleted."
        return f"{self.hidden} runs are not shown: you may not see them or they were deleted."


def parse_ids(values: Iterable[str]) -> list[uuid.UUID]:
    """The run ids of `?jobs=a,b` (or `?jobs=a&jobs=b`, as a form of checkboxes sends them), once each, in order."""
    text = ",".join(values)
    if len(text) > MAX_TEXT:
        raise CompareRefused(f"A comparison shows at most {MAX_RUNS} runs. Tick fewer runs and press Compare again.")
    ids: list[uuid.UUID] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            job_id = uuid.UUID(part)
        except ValueError:
            shown = part if len(part) <= 40 else part[:40] + "…"
            raise CompareRefused(
                f"“{shown}” is not a run's id. Pick the runs from My jobs or the course's jobs and press Compare."
            ) from None
        if job_id not in ids:
            ids.append(job_id)
    if len(ids) < MIN_RUNS:
        raise CompareRefused("Pick two or more runs to compare: tick them in My jobs and press Compare.")
    if len(ids) > MAX_RUNS:
        raise CompareRefused(
            f"You picked {len(ids)} runs; a comparison shows at most {MAX_RUNS}. Untick some and press Compare again."
        )
    return ids


def visible_runs(viewer, job_ids: Sequence[uuid.UUID | str]) -> Selection:
    """The named runs the viewer may see, with what a comparison reads of them in one query; NothingVisible if none.

    A sweep's page passes its runs' ids here too, so its comparison is checked the same way."""
    ids = [uuid.UUID(str(job_id)) for job_id in job_ids]
    found = {
        job.pk: job
        for job in access.visible_jobs(viewer)
        .filter(pk__in=ids)
        .select_related("template", "owner", "course", "cluster", "summary", "accounted", "load_test")
        .defer("script", "template__body", "cluster__host_key", "cluster__preamble")
    }
    if not found:
        raise NothingVisible
    return Selection(jobs=[found[i] for i in ids if i in found], hidden=len(ids) - len(found))
