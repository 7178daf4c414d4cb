"""The notification vocabulary: events, channels, and which (event, channel) pairs are on for someone who has
chosen nothing. A leaf: other apps name events from here (`notifications.events.Event.IDLE_WARNING`)."""

from __future__ import annotations

from django.db import models


class Event(models.TextChoices):
    STARTED = "started", "Job started"
    FINISHED = "finished", "Job finished"
    FAILED = "failed", "Job failed"
    IDLE_WARNING = "idle_warning", "GPU idle warning"
    TIME_LIMIT_SOON = "time_limit_soon", "Ten minutes before the time limit"
    BUDGET_80 = "budget_80", "GPU-hour budget: 80 % used"
    BUDGET_95 = "budget_95", "GPU-hour budget: 95 % used"
    BUDGET_USED_UP = "budget_used_up", "GPU-hour budget used up (running jobs stop after the course's grace)"
    BUDGET_TOP_UP = "budget_top_up", "GPU-hours added to your budget by an instructor"
    CANCELLED_BY_OTHER = "cancelled_by_other", "Job cancelled by someone else"
    STOPPED_BY_RULE = "stopped_by_rule", "Job stopped by the course's rules (term ended, budget used up, idle GPUs)"
    DIGEST = "digest", "Course digest (instructors)"
    SWEEP_ENDED = "sweep_ended", "Sweep ended (once for all its runs)"
    LAB_NOTE = "lab_note", "A note from your instructor on a lab page"


class Channel(models.TextChoices):
    EMAIL = "email", "Email"
    BROWSER = "browser", "Browser"
    WEBHOOK = "webhook", "Course webhook"


PERSONAL_CHANNELS = (Channel.EMAIL, Channel.BROWSER)  # what a person chooses; the webhook is the course's

# The budget pass's levels (jobs.signals.budget_crossed) and the event each is told as.
BUDGET_EVENTS = {80: Event.BUDGET_80, 95: Event.BUDGET_95, 100: Event.BUDGET_USED_UP}

# Off by default: the two that would mail someone for every job they run.
_QUIET_BY_EMAIL = {Event.STARTED, Event.FINISHED}


def default_on(event: str, channel: str) -> bool:
    if channel == Channel.EMAIL:
        return event not in _QUIET_BY_EMAIL
    return channel == Channel.BROWSER


# What a course's webhook posts unless its instructor picks otherwise.
WEBHOOK_DEFAULT_EVENTS = [Event.FAILED, Event.DIGEST]
