"""The Celery app. Tasks live in workers/; they are thin and call the apps' services.

Submissions survive a worker's death: task messages are acknowledged late (settings: CELERY_TASK_ACKS_LATE,
CELERY_TASK_REJECT_ON_WORKER_LOST), so a killed pool process gives its message back at once; when the whole
worker dies its unacknowledged messages return only after the broker's visibility timeout, so each worker, once
ready, submits again the jobs no live worker holds. The stale-submission sweep in the beat is the last resort.
"""

import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers", "sweeps"])


@worker_ready.connect
def resume_submissions(**_kwargs) -> None:
    from django.db import connection

    from jobs.submission import resume_waiting
    from sweeps.submission import resume_stale

    try:
        resume_waiting()
        resume_stale()  # a sweep's array: its own submission (sweeps/submission.py)
    finally:
        connection.close()  # the main process does no other database work
