"""What the cluster's queue did with each job (Kueue: admitted, preempted, requeued, …), kept once per step.

The poll hands over every job's milestones each cycle (clusters/backends/base.py:QueueMilestone); a step not kept
yet becomes a QueueStep and a line on the job's timeline (a JobEvent of kind "queue"), in one query to find what
is new and two bulk inserts for the whole cluster.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count

from core.choices import EventKind

from .models import Job, JobEvent, QueueStep

COUNTED = ("Preempted", "Requeued")


def record(milestones: dict[Job, tuple]) -> int:
    """Keep the steps not kept yet; the number of new ones."""
    wanted = {(job.pk, step.condition, step.at): (job, step) for job, steps in milestones.items() for step in steps}
    if not wanted:
        return 0
    kept = set(
        QueueStep.objects.filter(job__in=[job.pk for job in milestones], at__gte=min(key[2] for key in wanted))
        .values_list("job_id", "condition", "at")
        .order_by()
    )
    new = [(job, step) for key, (job, step) in sorted(wanted.items(), key=lambda item: item[0][2]) if key not in kept]
    QueueStep.objects.bulk_create(
        [QueueStep(job=job, condition=step.condition, reason=step.reason[:64], at=step.at) for job, step in new],
        ignore_conflicts=True,
    )
    JobEvent.objects.bulk_create([JobEvent(job=job, kind=EventKind.QUEUE, message=step.words) for job, step in new])
    return len(new)


def counts(job: Job) -> dict[str, int]:
    """How often the job was preempted and requeued, for its page; {} when never."""
    rows = QueueStep.objects.filter(job=job, condition__in=COUNTED).values("condition").annotate(n=Count("pk"))
    return {row["condition"].lower(): row["n"] for row in rows}


def preemptions_since(course, since: datetime) -> int:
    return QueueStep.objects.filter(job__course=course, condition="Preempted", at__gte=since).count()
