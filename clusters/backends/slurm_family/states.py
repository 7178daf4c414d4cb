"""SLURM's job states and reasons as the portal reads them: one table for every SLURM kind (SSH and REST).

squeue, sacct and slurmrestd print the same state names; anything not listed counts as running (it is on a node).
"""

import re

from core.choices import TERMINAL_STATES, JobState

STATE_MAP = {
    "PENDING": JobState.PENDING,
    "REQUEUED": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "RESV_DEL_HOLD": JobState.PENDING,
    "COMPLETED": JobState.COMPLETED,
    "CANCELLED": JobState.CANCELLED,
    "TIMEOUT": JobState.TIMED_OUT,
    "DEADLINE": JobState.TIMED_OUT,
    "FAILED": JobState.FAILED,
    "NODE_FAIL": JobState.FAILED,
    "BOOT_FAIL": JobState.FAILED,
    "OUT_OF_MEMORY": JobState.FAILED,
    "PREEMPTED": JobState.FAILED,
    "SPECIAL_EXIT": JobState.FAILED,
    "REVOKED": JobState.FAILED,
}
TERMINAL_RAW = {raw for raw, state in STATE_MAP.items() if state in TERMINAL_STATES}


def reason_text(raw: str | None) -> str:
    """SLURM's pending or ending reason, or "" where SLURM says there is none."""
    return "" if not raw or raw in {"None", "(null)"} else raw


def shell_exit_code(code: int, signal: int) -> int:
    """A shell-style exit code from SLURM's pair: 128+signal when the job was killed by a signal."""
    return 128 + signal if code == 0 and signal else code


# Pending reasons that do not clear while the cluster stays as it is (squeue(1), "JOB REASON CODES"): the job waits
# for a change only an admin can make, so the portal flags it, stops counting it against the quota, and cancels it
# after a grace period. Each entry says why, for the student.
NEVER_STARTS = {
    # The job's node count is outside the partition's limits (MinNodes/MaxNodes, or more nodes than it has).
    # squeue(1) notes it can also mean that required nodes are DOWN or DRAINED, which an admin may undo: the grace
    # period before the portal cancels leaves time for that.
    "PartitionNodeLimit": "it asks for more nodes than its partition allows",
    # The job's time limit exceeds the partition's MaxTime; only raising MaxTime would let it start.
    "PartitionTimeLimit": "its time limit is longer than its partition allows",
    # No node has the features or resources it asks for.
    "BadConstraints": "no node of the cluster has the features or resources it asks for",
    # The account or QOS it runs under does not exist (any more) for this user.
    "InvalidAccount": "the cluster account it runs under is not valid on this partition",
    "InvalidQOS": "the quality of service it runs under is not valid",
    # A job it depends on ended in a way that can never satisfy the dependency.
    "DependencyNeverSatisfied": "a job it depends on ended in a way that never satisfies it",
}
# QOSMax…PerJob…/AssocMax…PerJob…: the job alone asks for more than one job may have under the QOS or association.
# (The …PerUser… and Grp… limits are not here: they clear when the user's or group's other jobs end.)
NEVER_STARTS_PER_JOB = re.compile(r"^(QOS|Assoc)Max\w*PerJob")
# Not here: ReqNodeNotAvail, NodeDown, PartitionDown/Inactive, Reservation, JobHeld*: nodes come back, partitions
# are put up again, reservations end and holds are released, so these jobs may yet start.


def never_starts(reason: str) -> str:
    """Why a job pending for `reason` will never start, or "" when the reason may clear."""
    code = reason.split(",")[0].strip()  # "ReqNodeNotAvail, UnavailableNodes:gpu01" → "ReqNodeNotAvail"
    if code in NEVER_STARTS:
        why = NEVER_STARTS[code]
    elif NEVER_STARTS_PER_JOB.match(code):
        why = "it asks for more than one job may use under its account's limits"
    else:
        return ""
    return f"SLURM will never start this job: {why} ({code})."


# Why a job waits, in words for the student (squeue(1), "JOB REASON CODES"); the codes a teaching cluster shows most.
WAITING_WORDS = {
    "Resources": "the GPUs or cores it asks for are in use by running jobs",
    "Priority": "jobs with a higher priority are waiting for the same resources and start first",
    "Dependency": "it waits for another job it depends on to finish",
    "BeginTime": "it was asked not to start before a given time",
    "JobHeldUser": "it is held; release it or cancel it",
    "JobHeldAdmin": "an administrator holds it",
    "ReqNodeNotAvail": "the nodes it needs are down, drained or reserved",
    "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions": (
        "the nodes it needs are down, drained, or held for jobs of a higher-priority partition"
    ),
    "Reservation": "it waits for its reservation to begin",
    "PartitionDown": "its partition is down",
    "PartitionInactive": "its partition is not taking jobs",
    "QOSMaxJobsPerUserLimit": "you already run as many jobs as your account allows at once",
    "AssocGrpGRES": "your group's GPUs are all in use",
    "AssocGrpGRESMinutes": "your group has used up its GPU minutes",
    "QOSMaxGRESPerUser": "you already hold as many GPUs as your account allows at once",
}


# Waiting only for busy resources or for jobs ahead of it: asking for less may start it sooner (jobs/wait_advice.py).
FOR_RESOURCES = {"Resources", "Priority"}


def waiting_words(reason: str) -> str:
    """SLURM's pending reason as a sentence for the student; the code itself where the table has no words for it."""
    code = reason.split(",")[0].strip()
    words = WAITING_WORDS.get(reason) or WAITING_WORDS.get(code)
    if words:
        return words[0].upper() + words[1:] + "."
    return f"SLURM says: {reason}." if reason else ""
