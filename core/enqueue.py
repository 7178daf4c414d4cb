"""Sending a Celery task by the name it is registered under, once the caller's transaction commits.

Apps below `workers` never import the tasks (they would import each other): each app names the tasks it sends
(jobs/enqueue.py, courses/lab_sessions.py) and sends them through here. Outside a transaction a task is sent at once;
a worker never looks for a row that is not committed yet.
"""

from __future__ import annotations

from celery import current_app
from django.db import transaction


def send_on_commit(name: str, *args) -> None:
    transaction.on_commit(lambda: send(name, args))


def send(name: str, args: tuple) -> None:
    current_app.signature(name, args=args).delay()
