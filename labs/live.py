"""The progress grid's live updates: when one of a student's runs moves (jobs' `job_moved` signal), or they answer a
step, that student's row is computed again and sent to each affected lab's group. A worker does it once the move is
committed (workers/labs.py, sent by name), so the poll that moved the run never waits on reading its log. One group
per lab (`labs.lab.<id>`); the consumer checks access before joining it (labs/consumers.py)."""

from __future__ import annotations

import json
import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model
from django.dispatch import receiver
from django.urls import reverse
from django.utils import timezone

from core.enqueue import send_on_commit
from jobs.signals import job_moved

from .grid import Row, row_for
from .models import Lab
from .progress import student_progress

logger = logging.getLogger(__name__)
SEND_ROWS = "workers.labs.send_rows"


def lab_group(lab_id: int) -> str:
    return f"labs.lab.{lab_id}"


def row_message(lab: Lab, row: Row) -> dict:
    """A grid row as the page's script reads it (static/js/lab_grid.js); the same shape the page is drawn from."""
    return {
        "type": "row",
        "student": row.student.pk,  # type: ignore[attr-defined]
        "done": row.done,
        "flags": row.flags,
        "cells": [
            {
                "step": cell.step.pk,
                "state": cell.state,
                "label": cell.label,
                "flags": cell.flags,
                "job": reverse("jobs:detail", args=[cell.latest.pk]) if cell.latest else "",
            }
            for cell in row.cells
        ],
    }


def send_row(lab: Lab, student) -> None:
    cells = student_progress(lab, student, read_logs=True)
    layer = get_channel_layer()
    if layer is None:
        return
    text = json.dumps(row_message(lab, row_for(lab, student, cells, timezone.now())), separators=(",", ":"))
    async_to_sync(layer.group_send)(lab_group(lab.pk), {"type": "lab.row", "text": text})


def send_rows_after_commit(labs: list[Lab], student) -> None:
    send_on_commit(SEND_ROWS, [lab.pk for lab in labs], student.pk)


def send_rows(lab_ids: list[int], student_id: int) -> None:
    """The worker's side: each lab's row for the student, read again (a lab or a student gone meanwhile: nothing)."""
    student = get_user_model().objects.filter(pk=student_id).first()
    if student is None:
        return
    for lab in Lab.objects.filter(pk__in=lab_ids).select_related("course", "lab_session"):
        try:
            send_row(lab, student)
        except Exception:  # the grid catches up on its next open
            logger.exception("labs: could not send the grid row of %s in lab %s", student_id, lab.pk)


@receiver(job_moved, dispatch_uid="labs.job_moved")
def on_job_moved(sender, job, from_state, to_state, actor=None, **kwargs) -> None:
    try:
        labs = list(
            Lab.objects.filter(course_id=job.course_id, sections__steps__template_id=job.template_id).distinct()
        )
        if labs:
            send_rows_after_commit(labs, job.owner)
    except Exception:
        logger.exception("labs: could not look up the labs of job %s", job.pk)
