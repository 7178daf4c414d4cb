"""Signals other apps listen to, so that `jobs` tells them about its jobs without importing them.

`job_moved` is sent by the state machine (jobs/states.py) after each move it made, with `job` (already in its new
state), `from_state`, `to_state` and `actor` (who asked, or None for the scheduler and the portal).
"""

from django.dispatch import Signal

job_moved = Signal()

# Sent by the budget pass (jobs/budget_pass.py, through jobs/budget_news.py) when a student's GPU-hour budget
# crosses a warning level (80, 95) or runs out (100), once per level and period, with `course`, `student_id`,
# `level`, `text` (what to tell them) and `key` (the occurrence, for de-duplication).
budget_crossed = Signal()

# Sent when an instructor tops up a student's budget (jobs/budget_news.py), with `course`, `student_id`, `text` and
# `key` (the top-up).
budget_topped_up = Signal()

# Sent by the idle pass (telemetry/idle_reaping.py) when a running job is warned that its GPUs are idle, with `job` and
# `text` (the numbers, and when it will be cancelled).
idle_warned = Signal()
