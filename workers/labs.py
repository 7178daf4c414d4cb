"""The progress grid's rows, computed and sent by a worker after a student's run moved (labs/live.py queues this by
name), so that reading a run's log for a check never holds up the poll that moved it."""

from __future__ import annotations

from celery import shared_task

from labs import live


@shared_task(name=live.SEND_ROWS, ignore_result=True)
def send_rows(lab_ids: list[int], student_id: int) -> None:
    live.send_rows(lab_ids, student_id)
