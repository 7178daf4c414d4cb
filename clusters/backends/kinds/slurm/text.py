"""SLURM's text formats shared by the SSH kind's readers (backend.py, queue.py): durations, times, GRES (host lists:
clusters/backends/slurm_family/hostlist.py, which both SLURM kinds read)."""

from __future__ import annotations

import re
from datetime import datetime

from django.utils import timezone

_GPU_COUNT = re.compile(r"gpu(?::[^:(,\s]+)?:(\d+)")  # "gpu:a100:4(S:0-1)" → 4; "gpu:2,gpu:v100:2" → 2, 2


def parse_minutes(text: str) -> int | None:
    """A SLURM duration ("30", "1:00:00", "2-00:00:00", "infinite") in whole minutes; None for no limit."""
    text = text.strip()
    if not text or text.lower() in {"infinite", "unlimited", "n/a", "none"}:
        return None
    days, _, rest = text.rpartition("-")
    try:
        parts = [int(p) for p in rest.split(":")]
        int(days or 0)
    except ValueError:
        return None  # a format this parser does not know: no limit assumed, SLURM itself still enforces it
    if days:  # days-hours[:minutes[:seconds]]
        hours, minutes = [*parts, 0, 0][:2]
    elif len(parts) == 3:
        hours, minutes = parts[:2]
    else:  # minutes[:seconds]
        hours, minutes = 0, parts[0]
    return int(days or 0) * 1440 + hours * 60 + minutes  # seconds left over do not make a whole minute


def _parse_time(value: str) -> datetime | None:
    if not value or value in {"N/A", "Unknown", "None"}:
        return None
    try:
        return timezone.make_aware(datetime.fromisoformat(value))
    except ValueError:
        return None
