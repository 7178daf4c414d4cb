"""Signals other apps listen to, so that `jobs` tells them about its jobs without importing them.

`job_moved` is sent by the state machine (jobs/states.py) after each move it made, with `job` (already in its new
state), `from_state`, `to_state` and `actor` (who asked, or None for the scheduler and the portal).
"""

from django.dispatch import Signal

job_moved = Signal()
