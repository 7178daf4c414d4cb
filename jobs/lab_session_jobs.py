"""A lab session's start, seen from the jobs: the course's jobs already waiting on that cluster go into its reservation.

Jobs launched during a held session are submitted into its reservation (jobs/submission.py). Those launched before it
began (or while the cluster was still making the reservation) would otherwise wait for the GPUs held for their own
class until the session ends. Once a held session is on, the workers move them in, once per session
(`pending_moved_at`). A retried task may ask SLURM again, which changes nothing: a job waits in one reservation.
"""

from __future__ import annotations

from django.utils import timezone

from core.choices import EventKind, JobState
from courses import lab_reservations
from courses.lab_sessions import holding_kinds
from courses.models import LabSession, LabSessionState

from .models import Job
from .states import record_many

MOVE_PENDING = "workers.tasks.move_pending_into_lab_session"


def due(now=None) -> list[int]:
    """Held sessions on now whose course's waiting jobs have not been moved in yet (where jobs go into a hold)."""
    now = now or timezone.now()
    on = LabSession.objects.filter(state=LabSessionState.HELD, starts_at__lte=now, ends_at__gt=now)
    on = on.filter(cluster__kind__in=holding_kinds(jobs_go_in=True))
    return list(on.filter(pending_moved_at=None).values_list("pk", flat=True))


def move_pending(session_id: int) -> list[Job]:
    """Move the course's pending jobs on the session's cluster into its reservation; the jobs moved, each with an
    event. BackendErrors are raised for the task's retry (the session stays due)."""
    now = timezone.now()
    session = LabSession.objects.select_related("course", "cluster").filter(pk=session_id).first()
    if session is None or session.state != LabSessionState.HELD or not session.starts_at <= now < session.ends_at:
        return []
    waiting = list(
        Job.objects.filter(course_id=session.course_id, cluster_id=session.cluster_id, state=JobState.PENDING)
        .exclude(scheduler_id="")
        .order_by("created_at")
    )
    moved_ids = set()
    if waiting:
        holds = lab_reservations.holds_of(session)
        request = lab_reservations.hold_request(session, now)
        moved_ids = set(holds.move_jobs_in(request, [j.scheduler_id for j in waiting]))
    moved = [job for job in waiting if job.scheduler_id in moved_ids]
    if moved:
        record_many(
            moved,
            EventKind.NOTE,
            f"The class's lab session began: this job now waits for the GPUs held for the class "
            f"(reservation {session.reservation_name}).",
        )
    LabSession.objects.filter(pk=session.pk, pending_moved_at=None).update(pending_moved_at=now)
    return moved
