"""The exit codes scripts rely on, each as the exception that ends the command with it.

0 done · 1 anything else (the portal unreachable, a server error, a --timeout) · 2 usage (click's own) ·
3 refused or not found (any 4xx from the portal, an unknown or ambiguous job id) · 4 the job ended other than completed.
"""

from __future__ import annotations

import click

from .output import safe

FAILURE = 1
REFUSED = 3
JOB_DID_NOT_COMPLETE = 4


class Ending(click.ClickException):
    """A message that may carry the portal's (or a job's) words: shown with their control characters written out."""

    def format_message(self) -> str:
        return safe(self.message)


class Failure(Ending):
    exit_code = FAILURE


class Refused(Ending):
    """The portal's refusal, or a job name that fits none or several of the user's jobs."""

    exit_code = REFUSED


class JobDidNotComplete(Ending):
    exit_code = JOB_DID_NOT_COMPLETE
