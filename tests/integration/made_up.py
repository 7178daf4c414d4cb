"""Scheduler ids for jobs a test makes by hand, never submitted.

They lie above SLURM's MaxJobId (67,043,328 by default, as on the test cluster), so SLURM never gives one to a real
job: the worker's poll finds no job under it, and the clean-up's scancel stops nothing. A made-up id in SLURM's range
is some day another test's real job: the poll then ended a "running" job under the test with that job's state, and
the clean-up cancelled that job under the other test.
"""

from __future__ import annotations

import itertools

ABOVE_MAX_JOB_ID = 90_000_000
_next = itertools.count(ABOVE_MAX_JOB_ID)


def scheduler_id() -> str:
    return str(next(_next))
