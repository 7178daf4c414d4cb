"""The job-state vocabulary: the states a job can be in, the kinds of event on its timeline, and named sets.

A leaf: it imports nothing from the project, so `clusters` (whose backends translate the scheduler's words into
these states), `courses`, `telemetry` and `jobs` itself all name states from here. Which moves between states
exist, and the one function that makes them, are the state machine's (`jobs/states.py`).
"""

from __future__ import annotations

from django.db import models


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    SUBMITTING = "submitting", "Submitting"
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    TIMED_OUT = "timed_out", "Timed out"
    SUBMIT_FAILED = "submit_failed", "Submit failed"
    LOST = "lost", "Lost"


class EventKind(models.TextChoices):
    LAUNCH = "launch", "Launched"
    STATE = "state", "State change"
    CANCEL = "cancel", "Cancel requested"
    NOTE = "note", "Note"
    QUEUE = "queue", "Queue"  # what the cluster's queue (Kueue) did with the job: admitted, preempted, requeued…


TERMINAL_STATES = frozenset(
    {
        JobState.COMPLETED,
        JobState.FAILED,
        JobState.CANCELLED,
        JobState.TIMED_OUT,
        JobState.SUBMIT_FAILED,
        JobState.LOST,
    }
)
ACTIVE_STATES = frozenset(set(JobState) - TERMINAL_STATES)
ON_SCHEDULER_STATES = frozenset({JobState.PENDING, JobState.RUNNING})  # what a poll asks about


class EndpointAPI(models.TextChoices):
    """The inference API a server template speaks (the job page's Try it and load test use it)."""

    OLLAMA = "ollama", "Ollama (/api/generate, /api/chat)"
    OPENAI = "openai", "OpenAI (/v1/chat/completions)"


class SessionKind(models.TextChoices):
    """What a template's job is to the student: a batch run (empty), or an interactive session the portal opens."""

    BATCH = "", "Batch job"
    JUPYTERLAB = "jupyterlab", "JupyterLab"
