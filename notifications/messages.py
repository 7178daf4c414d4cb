"""What each event says: a subject, a few lines of text, and the portal page it points to. Written for the person
who reads it on a phone: what happened, to which job, and what to do."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.urls import reverse

from core.choices import SessionKind

from .events import Event


@dataclass(frozen=True)
class Message:
    subject: str
    text: str
    url: str = ""


def compose(event: str, job=None, context: dict | None = None) -> Message:
    context = context or {}
    url = settings.PORTAL_URL + job.get_absolute_url() if job is not None else context.get("url", "")
    name = f"{job.template.name} #{job.short_id}" if job is not None else ""
    text = context.get("text", "")
    match event:
        case Event.STARTED if job.template.session == SessionKind.JUPYTERLAB:
            # The one start a student waits for at the screen: the link goes straight to the session page.
            url = settings.PORTAL_URL + reverse("sessions:job_notebook", args=[job.pk])
            body = (
                f"Your session {name} is starting on {job.cluster.display_name}. JupyterLab is usually ready within "
                "a minute or two: open the session page to start working."
            )
            return Message(f"{name} is starting", body, url)
        case Event.STARTED:
            return Message(f"{name} started", f"Your job {name} is running on {job.cluster.display_name}.", url)
        case Event.FINISHED:
            return Message(f"{name} finished", f"Your job {name} finished.\n{_summary(job)}", url)
        case Event.FAILED:
            why = job.error or f"It ended as {job.get_state_display().lower()}."
            return Message(f"{name} failed", f"Your job {name} failed. {why}\n{_summary(job)}", url)
        case Event.CANCELLED_BY_OTHER:
            return Message(f"{name} was cancelled", f"Your job {name} was cancelled. {text}".strip(), url)
        case Event.STOPPED_BY_RULE:
            return Message(f"{name} was stopped by the course's rules", f"Your job {name} was stopped. {text}", url)
        case Event.TIME_LIMIT_SOON:
            left = context.get("left", 10)
            body = f"Your job {name} reaches its time limit in {left} minute(s) and will be stopped. Save your work."
            return Message(f"{name}: {left} minute(s) left", body, url)
        case Event.IDLE_WARNING:
            body = text or f"The GPUs of your job {name} are idle. Use them, or cancel the job so others can."
            return Message(f"{name}: GPU idle", body, url)
        case Event.BUDGET_80 | Event.BUDGET_95:
            level = 80 if event == Event.BUDGET_80 else 95
            return Message(
                f"GPU-hour budget {level} % used", text or f"You have used {level} % of your GPU-hour budget.", url
            )
        case Event.BUDGET_TOP_UP:
            return Message("GPU-hours added to your budget", text, url)
        case Event.BUDGET_USED_UP:
            body = text or "Your GPU-hour budget is used up: running jobs stop after the course's grace."
            return Message("GPU-hour budget used up", body, url)
        case _:
            return Message(context.get("subject", Event(event).label), text, url)


def _summary(job) -> str:
    lines = [f"State: {job.get_state_display()}"]
    if job.exit_code is not None:
        lines.append(f"Exit code: {job.exit_code}")
    if job.started_at and job.finished_at:
        minutes = (job.finished_at - job.started_at).total_seconds() / 60
        lines.append(f"Ran for {minutes:.1f} min on {job.gpus} GPU(s)")
    return "\n".join(lines)
