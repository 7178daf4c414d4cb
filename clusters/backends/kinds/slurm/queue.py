"""The queue of a SLURM cluster over SSH: one `squeue --start` and one `sprio` per cycle, for every job at once.

`squeue --start --states=PENDING,RUNNING` prints pending jobs with SLURM's estimated start (set by the backfill
scheduler) and running jobs with where they run and when they reach their limit; `sprio` prints each pending job's
priority factors where the cluster runs priority/multifactor (elsewhere it refuses, and the view has no factors).
"""

from __future__ import annotations

from core.choices import JobState

from ...queue import QueuedJob, QueueView
from ...slurm_family.hostlist import expand_hostlist
from ...slurm_family.states import FOR_RESOURCES, reason_text, waiting_words
from .text import _GPU_COUNT, _parse_time, parse_minutes

SQUEUE_START = [
    "squeue",
    "--start",
    "--states=PENDING,RUNNING",
    "--noheader",
    "-r",  # an array's waiting tasks one by one, "<array>_<task>" as the portal keys a sweep's runs
    # id, state, partition, priority, start (estimate), end, GRES per node, limit, nodes, reason, submitted, node list,
    # planned nodes
    "--format=%i|%T|%P|%Q|%S|%e|%b|%l|%D|%r|%V|%N|%Y",
]
SPRIO = ["sprio", "--noheader", "--format=%i|%r|%Y|%A|%F|%J|%P|%Q|%B|%S|%T|%N"]
# sprio's weighted factors after id, partition and priority, in its column order, named for the student.
FACTORS = ("Time waited", "Fair share", "Job size", "Partition", "QOS", "Account", "Site", "TRES", "Nice")
NO_MULTIFACTOR = "not running a supported priority plugin"


def gpus_of(gres: str) -> int:
    """ "gres:gpu:2", "gres:gpu:a100:2", "gres/gpu:2" → 2; "N/A" → 0."""
    return sum(int(n) for n in _GPU_COUNT.findall(gres))


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.lstrip("-").isdigit() else None


def _nodes(text: str) -> tuple[str, ...]:
    text = text.strip()
    return () if not text or text in {"(null)", "N/A"} else tuple(expand_hostlist(text))


def parse_squeue_start(text: str) -> list[QueuedJob]:
    jobs = []
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) != 13 or not fields[0].strip().isdigit():
            continue
        sid, raw, partition, priority, start, end, gres, limit, count, reason, submitted, nodes, planned = fields
        pending = raw.strip() == "PENDING"
        jobs.append(
            QueuedJob(
                scheduler_id=sid.strip(),
                state=JobState.PENDING if pending else JobState.RUNNING,
                partition=partition.strip().split(",")[0],
                gpus_per_node=gpus_of(gres),
                node_count=_int(count) or 1,
                nodes=_nodes(planned if pending else nodes),
                priority=_int(priority),
                time_limit_minutes=parse_minutes(limit),
                submitted_at=_parse_time(submitted.strip()),
                start_at=_parse_time(start.strip()),
                end_at=None if pending else _parse_time(end.strip()),
                reason=waiting_words(reason_text(reason.strip())) if pending else "",
                for_resources=pending and reason.strip() in FOR_RESOURCES,
            )
        )
    return jobs


def parse_sprio(text: str) -> dict[str, tuple[tuple[str, int], ...]]:
    """Pending job id → its nonzero weighted factors, largest first. A job listed once per partition keeps the
    first line (its partition in squeue is the first one too)."""
    found: dict[str, tuple[tuple[str, int], ...]] = {}
    for line in text.splitlines():
        fields = [field.strip() for field in line.split("|")]
        if len(fields) != 3 + len(FACTORS) or not fields[0].isdigit() or fields[0] in found:
            continue
        values = [(name, _int(value)) for name, value in zip(FACTORS, fields[3:], strict=True)]
        nonzero = [(name, value) for name, value in values if value]
        found[fields[0]] = tuple(sorted(nonzero, key=lambda item: -abs(item[1])))
    return found


def queue_view(squeue_text: str, sprio_text: str | None) -> QueueView:
    """The cycle's view from the two commands' output; `sprio_text` None: the cluster has no priority factors."""
    factors = parse_sprio(sprio_text) if sprio_text is not None else {}
    jobs = tuple(
        QueuedJob(**{**job.__dict__, "factors": factors.get(job.scheduler_id, ())}) if job.state == "pending" else job
        for job in parse_squeue_start(squeue_text)
    )
    return QueueView(jobs=jobs, ordered=True, has_factors=sprio_text is not None)
