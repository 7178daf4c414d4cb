"""The progress grid's live updates: when one of a student's runs moves (jobs' `job_moved` signal), or they answer a
step, that student's row is computed again and sent to each affected lab's group, once the move is committed. One
group per lab (`labs.lab.<id>`); the consumer checks access before joining it (labs/consumers.py)."""

from __future__ import annotations

import json
import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.dispatch import receiver
from django.urls import reverse
from django.utils import timezone

from jobs.signals import job_moved

from .grid import Row, row_for
from .models import Lab
from .progress import student_progress

logger = logging.getLogger(__name__)


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
    def send() -> None:
        for lab in labs:
            try:
                send_row(lab, student)
            except Exception:  # the grid catches up on its next open; a job's move must never fail for it
                logger.exception("labs: could not send the grid row of %s in lab %s", student.pk, lab.pk)

    transaction.on_commit(send)


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
