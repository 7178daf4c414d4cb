"""The slurmrestd API versions this kind speaks, and every difference between them, in one table.

A server lists what it offers in its OpenAPI document (paths /slurm/v0.0.NN/…); the newest version offered that is
in VERSIONS is used. Whatever the table does not mention is the same in every version listed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ApiVersion:
    name: str  # as it appears in paths, e.g. "v0.0.38"
    stdout_property: str  # the job property naming the output file
    update_time: bool  # GET /jobs takes ?update_time= and answers 304 when no job changed since
    # A pending job's start_time is the scheduler's estimate and `priority` its total; none of these versions has
    # sprio's factors (no priority endpoint), so the job page shows the total alone.
    priority_factors: bool = False

    def path(self, rest: str) -> str:
        return f"/slurm/{self.name}/{rest.lstrip('/')}"


# Newest first. Checked against slurmrestd 22.05 (openapi/v0.0.36 … v0.0.38).
VERSIONS = (
    ApiVersion("v0.0.38", stdout_property="standard_output", update_time=True),
    ApiVersion("v0.0.37", stdout_property="standard_output", update_time=True),
    ApiVersion("v0.0.36", stdout_property="standard_out", update_time=False),
)
_JOBS_PATH = re.compile(r"^/slurm/(v\d+\.\d+\.\d+)/jobs/?$")


def offered(openapi: dict) -> list[str]:
    """The slurm API versions whose job list the document describes."""
    return sorted({m.group(1) for path in openapi.get("paths", {}) if (m := _JOBS_PATH.match(path))})


def choose(openapi: dict) -> ApiVersion | None:
    """The newest version both sides speak, or None."""
    names = set(offered(openapi))
    return next((version for version in VERSIONS if version.name in names), None)
