"""Work this app hands to the Celery workers: every enqueue from `jobs` goes through here, by task name.

The tasks (workers/tasks.py) call this app's services; were the services to import the tasks back, the two would
import each other. So `jobs` sends a task by the name it is registered under (Celery's `app.signature(name)`), and
the tasks take their names from the constants below: one home for each name, and no import upward.

A task is sent once the caller's transaction commits, so a worker never looks for a row that is not there yet (the
Django half of `delay_on_commit`); outside a transaction it is sent at once. Sending twice is harmless: the tasks are
idempotent (jobs/submission.py, jobs/cancellation.py).
"""

from __future__ import annotations

from core.enqueue import send_on_commit as _send_on_commit

SUBMIT_JOB = "workers.tasks.submit_job"
CANCEL_JOB = "workers.tasks.cancel_job"
SEND_TERM_NOTICE = "workers.mail.send_term_notice"
KEEP_LOG = "workers.tasks.keep_job_log"


def submit(job_id) -> None:
    """Submit the job to its cluster (or honour a cancel request recorded on it)."""
    _send_on_commit(SUBMIT_JOB, str(job_id))


def cancel(job_id, actor_id: int | None = None, why: str = "") -> None:
    """Stop the job on its cluster; `why` (with `actor_id`) is a request still to be recorded on the row."""
    _send_on_commit(CANCEL_JOB, str(job_id), actor_id, why)


def keep_log(job_id) -> None:
    """Copy an ended job's log into the portal (jobs/kept_logs.py)."""
    _send_on_commit(KEEP_LOG, str(job_id))


def term_notice(notice_id: int) -> None:
    """Mail a recorded course-term notice (jobs/term_end.py)."""
    _send_on_commit(SEND_TERM_NOTICE, notice_id)
