"""Celery hooks: a task logs with the id of the request that queued it, and with its job's id."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid

from celery import signals

from clusters.backends import ssh
from core import logs
from core import measurements as store

HEADER = "gpulab_request_id"
# Tasks whose first argument is a job id.
JOB_TASKS = {"workers.tasks.submit_job", "workers.tasks.cancel_job", "workers.tasks.stop_overdue_job"}


@signals.before_task_publish.connect
def _add_request_id(headers=None, **_):
    request_id = logs.request_id_var.get()
    if request_id and headers is not None:
        headers[HEADER] = request_id


@signals.task_prerun.connect
def _bind_ids(task=None, args=None, **_):
    request = getattr(task, "request", None)
    incoming = getattr(request, HEADER, None) or (getattr(request, "headers", None) or {}).get(HEADER)
    logs.request_id_var.set(logs.new_request_id(incoming) if incoming else "")
    logs.job_id_var.set("")
    if task is not None and task.name in JOB_TASKS and args:
        with contextlib.suppress(ValueError):
            logs.bind_job(uuid.UUID(str(args[0])))


@signals.task_postrun.connect
def _report_pool_after_task(**_):
    ssh.report_pool_size()


@signals.worker_process_init.connect
def _report_pool_while_alive(**_):
    """An idle worker process still holds its connections: it says so well within store.PROCESS_TTL."""

    def loop():
        while True:
            ssh.report_pool_size()
            time.sleep(store.PROCESS_TTL / 4)

    threading.Thread(target=loop, name="ssh-pool-gauge", daemon=True).start()
