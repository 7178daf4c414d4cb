"""Jobs named as on the pages: by their whole id or by its first characters (the pages show eight)."""

from __future__ import annotations

import re
import uuid

from . import context, exits
from .client import JSONObject, Portal

# The portal's TERMINAL_STATES (core/choices.py): a job in one of these will not change again.
# tests/test_cli_vocabulary.py fails if the two drift apart.
TERMINAL_STATES = frozenset({"completed", "failed", "cancelled", "timed_out", "submit_failed", "lost"})
COMPLETED = "completed"
SHORT = 8
_PREFIX = re.compile(r"[0-9a-f-]{1,36}")


def short(job: JSONObject) -> str:
    return str(job["id"])[:SHORT]


def resolve(portal: Portal, name: str) -> JSONObject:
    """The job the user means, fetched; exits 3 with words when the name fits none of their jobs, or several."""
    text = name.strip().lower()
    if _is_uuid(text):
        job: JSONObject = portal.get(f"/jobs/{text}/")
        return job
    if not _PREFIX.fullmatch(text):
        raise exits.Refused(f"{name!r} is not a job id: give its first characters, as the pages show them.")
    found = {job["id"]: job for job in portal.each("/jobs/", id_prefix=text)}  # by id: pages may shift meanwhile
    matches = [job for job in found.values() if str(job["id"]).startswith(text)]
    if not matches:
        raise exits.Refused(f"No job you can see has an id starting with {text!r}: not found.")
    if len(matches) > 1:
        listed = ", ".join(f"{str(job['id'])[: len(text) + 4]} ({job['template']})" for job in matches[:5])
        more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
        raise exits.Refused(f"{text!r} fits {len(matches)} jobs: {listed}{more}. Give more of the id.")
    return matches[0]


def _is_uuid(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


def complete_job(ctx: object, param: object, incomplete: str) -> list[str]:
    """Shell completion: the short ids of the user's newest hundred jobs; quiet on any error."""
    try:
        jobs = context.portal().each("/jobs/", mine="1", limit=100)
        return [short(job) for job in jobs if short(job).startswith(incomplete)]
    except Exception:  # completion must never print a traceback into the user's shell
        return []
