"""One message when a sweep ends, not one per run: the runs' own job notifications are left out
(notifications/job_hooks.py skips jobs in an array), and the last run to end tells the student once. A run's end
also lets the next run of a sweep that goes run by run out (release.py)."""

from __future__ import annotations

import logging
from collections import Counter

from django.conf import settings
from django.db import transaction
from django.dispatch import receiver
from django.utils import timezone

from core.choices import TERMINAL_STATES
from core.enqueue import send_on_commit
from jobs.models import Job
from jobs.signals import job_moved
from notifications import notify
from notifications.events import Event

from .cancellation import SUBMIT_SWEEP
from .models import Sweep, SweepState, SweepSubmission

logger = logging.getLogger(__name__)


@receiver(job_moved, dispatch_uid="sweeps.job_moved")
def on_run_moved(sender, job, from_state, to_state, **kwargs) -> None:
    if not job.in_array or to_state not in TERMINAL_STATES:
        return
    try:
        sweep = Sweep.objects.filter(runs__job=job.pk).select_related("owner", "template", "course").first()
        if sweep is None:
            return
        if sweep.submission == SweepSubmission.RUNS and sweep.state in (SweepState.QUEUED, SweepState.SUBMITTING):
            send_on_commit(SUBMIT_SWEEP, str(sweep.pk))  # its end makes room: the next run goes (release.py)
        tell_if_ended(sweep)
    except Exception:  # a message that cannot be queued must never stop a run's move
        logger.exception("sweeps: could not tell the end of the sweep of job %s", job.pk)


def tell_if_ended(sweep: Sweep) -> bool:
    states = list(Job.objects.filter(sweep_run__sweep=sweep).values_list("state", flat=True))
    if not states or any(state not in TERMINAL_STATES for state in states):
        return False
    with transaction.atomic():  # told once: the mark and the message together, or neither
        if not Sweep.objects.filter(pk=sweep.pk, ended_at__isnull=True).update(ended_at=timezone.now()):
            return False  # told already
        _tell(sweep, states)
    return True


def _tell(sweep: Sweep, states: list[str]) -> None:
    counts = Counter(Job(state=state).get_state_display().lower() for state in states)
    how = ", ".join(f"{n} {state}" for state, n in counts.most_common())
    notify(
        sweep.owner,
        Event.SWEEP_ENDED,
        context={
            "key": f"sweep:{sweep.pk}",
            "course": sweep.course,
            "subject": f"Sweep of {sweep.template.name} #{sweep.short_id} ended",
            "text": f"Your sweep of {sweep.template.name} ended: {len(states)} runs, {how}.",
            "url": settings.PORTAL_URL + sweep.get_absolute_url(),
        },
    )
